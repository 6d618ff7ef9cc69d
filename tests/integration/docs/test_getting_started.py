"""Every command the getting-started pages show (docs/getting-started/), run as a reader would run it, with the shape
of its output checked: `lyra demo`, then a first task through the command line and through REST (`lyra serve`).

Self-contained on purpose (no test helpers): the pages promise that these exact commands work on a fresh checkout.
Loads the real offline models (the demo judges its corpus), hence the ``models`` mark.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from lyra.bootstrap import Services
from lyra.core.settings import Settings

pytestmark = [pytest.mark.neo4j, pytest.mark.models]

ROOT = Path(__file__).resolve().parents[3]
CLAIM = "Intermittent fasting leads to greater weight loss than continuous calorie restriction in adults with obesity."
TABLE_HEADER = ("claim", "confidence", "uncertainty", "controversy", "alpha", "beta", "evidence", "sup", "ref", "neu")


def _env(settings: Settings) -> dict[str, str]:
    password = settings.neo4j.neo4j_password.get_secret_value() if settings.neo4j.neo4j_password else ""
    return {
        **os.environ,
        "NEO4J_URI": str(settings.neo4j.neo4j_uri),
        "NEO4J_USERNAME": settings.neo4j.neo4j_username,
        "NEO4J_PASSWORD": password,
        "COLUMNS": "150",
    }


def lyra(settings: Settings, *args: str, timeout: float = 1800) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "lyra", *args],
        capture_output=True,
        text=True,
        env=_env(settings),
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, (
        f"lyra {' '.join(args)}: {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def _ingest_summary(out: str, task_id: str) -> None:
    assert re.search(rf"^{task_id}: 40 documents -> \d+ new pages \(\d+ known\), \d+ new fragments", out, re.M), out
    assert re.search(r"\d+ pairs judged \(\d+ from cache\), edges", out), out
    assert re.search(r"candidate pairs \(the task's claims against its passages\): \d+ at or above the relevance", out)
    assert "skipped 2:" in out
    assert re.search(r"broken_encoding\.txt: not valid UTF-8", out) and re.search(r"empty\.md: empty file", out)


def _table(out: str, claims: int) -> None:
    header = next(line for line in out.splitlines() if "confidence" in line and "controversy" in line)
    assert [w for w in re.split(r"[\s┃│|]+", header) if w] == list(TABLE_HEADER), header
    rows = [line for line in out.splitlines() if re.search(r"│ \d\.\d{3}\s+│ \d\.\d{3}\s+│ \d\.\d{3}\s+│", line)]
    assert len(rows) == claims, out


def test_the_getting_started_commands_print_what_the_pages_show(
    graph: Services, settings: Settings, tmp_path: Path
) -> None:
    """In the pages' order, on one database: the demo, then the first task through the CLI and through REST."""
    demo_prints_the_ingest_summary_the_materials_table_and_a_browser_query(lyra(settings, "demo"))
    a_first_task_through_the_command_line(settings)
    with serving(settings, tmp_path) as base:
        a_first_task_through_rest(base)


def demo_prints_the_ingest_summary_the_materials_table_and_a_browser_query(demo_run: str) -> None:
    _ingest_summary(demo_run, "demo_corpus")
    assert re.search(r"^took [\d.]+ s", demo_run, re.M)
    _table(demo_run, claims=3)
    assert re.search(r"^Neo4j Browser: http://\S+/browser/", demo_run, re.M)
    assert "MATCH (t:Task {id: 'demo_corpus'})-[:HAS_CLAIM]->(c:Claim)" in demo_run


def a_first_task_through_the_command_line(settings: Settings) -> None:
    created = json.loads(lyra(settings, "task", "create", "fasting_first", CLAIM))
    assert created["task_id"] == "fasting_first" and created["hypothesis"] == CLAIM
    assert len(created["claim_ids"]) == 1 and created["status"] == "created"
    assert {"next_step", "notes", "duplicates_ignored"} <= set(created)

    ingested = lyra(settings, "ingest", "config/examples/corpus", "--task", "fasting_first")
    _ingest_summary(ingested, "fasting_first")
    assert "0 new pages (40 known)" in ingested  # the demo read the same corpus: pages are global and reused

    _table(lyra(settings, "materials", "fasting_first"), claims=1)
    materials = json.loads(lyra(settings, "materials", "fasting_first", "--json"))
    (claim,) = materials["claims"]
    _claim_shape(claim)


def _claim_shape(claim: dict[str, Any]) -> None:
    assert claim["text"] == CLAIM
    for key in ("confidence", "uncertainty", "controversy", "alpha", "beta"):
        assert isinstance(claim[key], float)
    assert claim["evidence_count"] == claim["supports_count"] + claim["refutes_count"] > 0
    assert isinstance(claim["neutral_count"], int)
    low, high = claim["credible_interval_95"]
    assert 0 <= low <= claim["confidence"] <= high <= 1
    assert {"fragments", "candidates", "judged", "pending", "below_floor", "own_source"} <= set(claim["coverage"])
    for item in claim["evidence"]:
        assert item["relation"] in {"supports", "refutes", "neutral"}
        assert item["url"].startswith(("file://", "https://")) and item["passage"]["untrusted"] is True
        assert 0 < item["nli_confidence"] <= 1 and 0 < item["weight"] <= 1


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(settings: Settings, tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    with (tmp_path / "serve.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "lyra", "serve", "--port", str(port)],
            env=_env(settings),
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "lyra serve did not answer"
            time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=60)


def a_first_task_through_rest(server: str) -> None:
    api = f"{server}/api/v1"
    with httpx.Client(timeout=300) as http:
        created = http.post(f"{api}/tasks", json={"hypothesis": CLAIM, "config": {"task_id": "fasting_rest"}})
        assert created.status_code == 201, created.text
        assert created.json()["task_id"] == "fasting_rest" and len(created.json()["claim_ids"]) == 1

        queued = http.post(f"{api}/tasks/fasting_rest/targets", json={"targets": [{"kind": "file", "value": "corpus"}]})
        assert queued.status_code == 202, queued.text
        body = queued.json()
        assert body["queued"] == 1 and body["duplicates"] == 0
        assert body["jobs"][0]["kind"] == "file" and body["jobs"][0]["value"].endswith("config/examples/corpus")

        deadline = time.monotonic() + 1800
        while True:
            status = http.get(f"{api}/tasks/fasting_rest/status", params={"wait": 120})
            assert status.status_code == 200, status.text
            jobs = status.json()["jobs"]
            if jobs["queued"] == jobs["running"] == 0:
                break
            assert time.monotonic() < deadline, status.text
        final = status.json()
        assert final["status"] == "completed" and jobs["done"] == 1 and final["errors"] == []
        assert {"pages", "fragments", "claims", "edges", "pages_read", "pairs"} <= set(final["metrics"])
        assert {"candidates", "judged", "pending", "below_floor", "pair_budget"} <= set(final["metrics"]["pairs"])

        materials = http.get(f"{api}/tasks/fasting_rest/materials", params={"limit": 5, "evidence_limit": 1})
        assert materials.status_code == 200, materials.text
        page = materials.json()
        assert page["task_id"] == "fasting_rest" and page["next_cursor"] is None
        (claim,) = page["claims"]
        _claim_shape(claim)
        assert len(claim["evidence"]) == 1
