"""Benchmark: claim confidence aggregated in Cypher vs edges fetched into Python, side by side.

Builds a synthetic task (claims x edges-per-claim stance edges over a shared pool of fragments) with
the batched writer, then times both paths on the same graph in the same run and checks they agree.
The Cypher path is the one every reader uses: ``MaterialsService.materials`` (the Cypher
`materials/claim_scores`) through ``MaterialsService.scores``.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from lyra.bootstrap import Services
from lyra.models.confidence import EdgeEvidence, beta_stats, reference_alpha_beta

RELATIONS = ("SUPPORTS", "REFUTES", "NEUTRAL")


class ConfidenceBenchResult(BaseModel):
    claims: int
    edges: int
    fragments: int
    load_seconds: float
    load_edges_per_second: float
    cypher_seconds_median: float
    python_seconds_median: float
    speedup: float
    max_abs_difference: float
    runs: int


def _median_time(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times: list[float] = []
    result: Any = None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def build_synthetic_task(
    services: Services, task_id: str, claims: int, edges_per_claim: int, seed: int = 7
) -> tuple[int, float]:
    """Write the synthetic task; return (fragment count, seconds spent writing stance edges)."""
    rng = random.Random(seed)
    fragment_pool = max(edges_per_claim * 10, min(claims * edges_per_claim // 10, 50_000))
    pages = services.evidence.upsert_pages(
        [{"url": f"https://bench.example.org/{task_id}/page/{i}"} for i in range(max(1, fragment_pool // 100))]
    ).ids
    fragment_ids = services.evidence.upsert_fragments(
        [
            {"page_id": pages[i % len(pages)], "text": f"{task_id} synthetic fragment {i}", "position": i}
            for i in range(fragment_pool)
        ]
    ).ids
    services.tasks.create_task(task_id, "Synthetic benchmark task", hypothesis_as_claim=False)
    claim_ids = services.tasks.add_claims(task_id, [f"synthetic claim {i}" for i in range(claims)])
    edges: list[dict[str, Any]] = []
    for claim_id in claim_ids:
        for fragment_id in rng.sample(fragment_ids, edges_per_claim):
            edges.append(
                {
                    "fragment_id": fragment_id,
                    "claim_id": claim_id,
                    "relation": rng.choice(RELATIONS),
                    "nli_confidence": rng.random(),
                    "source_domain_category": rng.choice(("academic", "unverified", "low")),
                }
            )
    start = time.perf_counter()
    services.evidence.create_stance_edges(edges)
    return fragment_pool, time.perf_counter() - start


def python_path(services: Services, task_id: str) -> dict[str, float]:
    """Fetch every stance edge of the task and compute each claim's confidence in Python."""
    by_claim: dict[str, list[EdgeEvidence]] = defaultdict(list)
    for row in services.store.run("confidence/task_stance_edges", {"task_id": task_id}):
        by_claim[row["claim_id"]].append(
            EdgeEvidence(row["relation"], row["nli_confidence"], bool(row["edge_human_corrected"]))
        )
    return {cid: beta_stats(reference_alpha_beta(edges)).confidence for cid, edges in by_claim.items()}


def cypher_path(services: Services, task_id: str) -> dict[str, float]:
    """Every claim's confidence as get_materials computes it (`MaterialsService.scores`: the same Cypher)."""
    return {c["claim_id"]: c["confidence"] for c in services.materials.scores(task_id)}


def run_confidence_bench(
    services: Services, claims: int, edges_per_claim: int, runs: int = 3, keep: bool = False
) -> ConfidenceBenchResult:
    task_id = f"bench_confidence_{claims}_{edges_per_claim}"
    if services.tasks.tasks.exists(task_id):
        services.cleanup.cleanup(task_id, "hard")
    print(f"building {claims} claims x {edges_per_claim} edges ...", file=sys.stderr)
    fragments, load_seconds = build_synthetic_task(services, task_id, claims, edges_per_claim)
    edges = claims * edges_per_claim
    try:
        cypher_path(services, task_id)  # warm-up: plan cache and page cache
        python_path(services, task_id)
        cypher_seconds, cypher_result = _median_time(lambda: cypher_path(services, task_id), runs)
        python_seconds, python_result = _median_time(lambda: python_path(services, task_id), runs)
        # Claims without any stance edge are absent from the Python path; they sit at 0.5 in both.
        diff = max(abs(cypher_result[c] - python_result.get(c, 0.5)) for c in cypher_result)
    finally:
        if not keep:
            services.cleanup.cleanup(task_id, "hard")
    return ConfidenceBenchResult(
        claims=claims,
        edges=edges,
        fragments=fragments,
        load_seconds=load_seconds,
        load_edges_per_second=edges / load_seconds,
        cypher_seconds_median=cypher_seconds,
        python_seconds_median=python_seconds,
        speedup=python_seconds / cypher_seconds,
        max_abs_difference=diff,
        runs=runs,
    )
