"""`python -m benchmarks.scale` (from the checkout) at a tiny size on the real Neo4j: the run checks every claim
against the generator's ground truth, its write floor (benchmarks/write_floor.py) times the three writes of the two
big steps, and the run leaves nothing behind (the floor's extra fragments and edges included)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from benchmarks.scale import ScaleBenchResult
from benchmarks.scale_data import sizes
from lyra.bootstrap import Services
from tests.support.helpers import ROOT

pytestmark = pytest.mark.neo4j
CLAIMS, EDGES, CITES = 200, 1_000, 100


def run_scale(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The benchmark as a checkout runs it: ``python -m benchmarks.scale`` from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.scale", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )


def count(services: Services, query: str) -> int:
    with services.store.driver.session(database=services.store.database) as session:
        return int(session.run(query).single(strict=True)["n"])


def test_bench_scale_with_the_write_floor_measures_every_step_and_leaves_nothing(graph: Services) -> None:
    args = ["--claims", str(CLAIMS), "--edges", str(EDGES), "--cites", str(CITES), "--rounds", "1"]
    result = run_scale(*args, "--floor", "--json", timeout=600)
    assert result.returncode == 0, result.stderr
    bench = ScaleBenchResult.model_validate(json.loads(result.stdout))

    fragments, pages = sizes(EDGES)
    assert (bench.fragments, bench.pages, bench.claims_checked) == (fragments, pages, CLAIMS)
    assert bench.max_abs_error_lyra < 1e-9 and bench.max_abs_error_sqlite < 1e-9
    steps_timed = {"pages", "fragments", "claims", "stance_edges", "citations"}
    assert set(bench.ingest_steps) == set(bench.sqlite_ingest_steps) == steps_timed
    assert bench.floor is not None
    steps = {f.step: f for f in bench.floor}
    assert (steps["fragments"].rows, steps["stance_edges"].rows) == (fragments, EDGES)
    for step in steps.values():
        assert min(step.transfer_seconds, step.blind_seconds, step.lyra_seconds) > 0
        assert step.sqlite_seconds == bench.sqlite_ingest_steps[step.step]

    # the clean-up removed the run's pages with every fragment on them (the floor's too) and the task with its claims
    assert count(graph, "MATCH (p:Page) WHERE p.url CONTAINS 'scale-bench.invalid' RETURN count(p) AS n") == 0
    assert count(graph, "MATCH (f:Fragment) WHERE f.text CONTAINS 'synthetic passage' RETURN count(f) AS n") == 0
    assert count(graph, "MATCH (c:Claim) WHERE c.task_id STARTS WITH 'bench_scale_' RETURN count(c) AS n") == 0
    assert count(graph, "MATCH ()-[r:SUPPORTS|REFUTES|NEUTRAL]->() RETURN count(r) AS n") == 0


def test_the_write_floor_cannot_be_kept() -> None:
    result = run_scale("--claims", "10", "--edges", "20", "--cites", "0", "--floor", "--keep")
    assert result.returncode != 0
    assert "--floor" in result.stderr and "--keep" in result.stderr
