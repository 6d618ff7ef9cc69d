"""Benchmark: pipeline throughput, and how much of its wall time is spent inside the models.

Runs the real pipeline (real Neo4j, real offline models) on a corpus into a throw-away task, with an
empty NLI cache and FAISS index in a temporary state folder, then judges the same pairs again with the
bare judge to measure the raw NLI throughput in the same run.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, SecretStr

from lyra.bootstrap import Services, build_services
from lyra.core.settings import Settings, load_experiment_settings
from lyra.graph.connection import resolve_connection
from lyra.ml.factory import Models, judge_settings


class PipelineBenchResult(BaseModel):
    corpus: str
    documents: int
    fragments: int
    pairs_judged: int
    seconds_total: float
    seconds_in_models: float
    share_in_models: float
    documents_per_second: float
    fragments_per_second: float
    pairs_per_second: float
    raw_judge_pairs_per_second: float
    compared_judges_pairs_per_second: dict[str, float] = {}  # other judges, timed on the same pairs in this run


SYNTHETIC_URL = "https://bench.example.org/study/"
_SUBJECTS = ["drug A", "the exercise programme", "the reading app", "the tax", "the vaccine", "the diet", "tutoring"]
_OUTCOMES = ["blood pressure", "test scores", "mortality", "sleep duration", "weight", "absenteeism", "recovery"]
_VERBS = ["lowered", "did not change", "raised", "was associated with lower", "had no effect on", "improved"]


def write_synthetic_corpus(folder: Path, passages: int, seed: int = 5) -> None:
    """JSONL abstracts built from templates (synthetic; only for throughput measurement)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    per_file = 1000
    for start in range(0, passages, per_file):
        lines = []
        for i in range(start, min(start + per_file, passages)):
            s, o, v = rng.choice(_SUBJECTS), rng.choice(_OUTCOMES), rng.choice(_VERBS)
            n = rng.randint(40, 4000)
            low, high = rng.uniform(-12, -1), rng.uniform(1, 12)
            place = rng.choice(["Norway", "Chile", "Kenya", "Japan"])
            text = (
                f"Study {i}: in {n} participants, {s} {v} {o} compared with control "
                f"(difference {rng.uniform(-9, 9):.1f}, 95% CI {low:.1f} to {high:.1f}). "
                f"Follow-up lasted {rng.randint(4, 104)} weeks in {place}."
            )
            lines.append(
                json.dumps(
                    {
                        "title": f"Synthetic study {i}",
                        "abstract": text,
                        "year": 2000 + i % 25,
                        "url": f"{SYNTHETIC_URL}{i}",
                    }
                )
            )
        (folder / f"part_{start // per_file:03d}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def run_pipeline_bench(
    settings: Settings, corpus: Path, claims: list[str], label: str, compare: Sequence[str] = ()
) -> PipelineBenchResult:
    task_id = "bench_pipeline"
    info, password = resolve_connection(settings)  # the managed instance is found via the real state folder
    with tempfile.TemporaryDirectory(prefix="lyra-bench-") as state:
        bench_settings = settings.model_copy(
            update={
                "state_dir": Path(state),  # empty FAISS index and NLI cache
                "neo4j_uri": info.uri,
                "neo4j_username": info.username,
                "neo4j_password": SecretStr(password),
            }
        )
        services: Services = build_services(bench_settings)
        try:
            if services.tasks.tasks.exists(task_id):
                services.cleanup.cleanup(task_id, "hard")
            services.tasks.create_task(task_id, "pipeline benchmark", hypothesis_as_claim=False)
            report = services.ingest.ingest([corpus], task_id, claims)
            # the same pairs again through the bare (uncached) judge: raw NLI throughput in this run
            rows = services.store.run("evidence/task_pairs", {"task_id": task_id})
            pairs = [(r["premise"], r["hypothesis"]) for r in rows]
            start = time.perf_counter()
            services.models.nli.judge(pairs)
            raw_seconds = time.perf_counter() - start
            compared: dict[str, float] = {}
            for variant in compare:
                variant_settings, switches = judge_settings(bench_settings, variant, load_experiment_settings())
                other = Models(variant_settings, experiment=switches).nli
                start = time.perf_counter()
                other.judge(pairs)
                compared[variant] = len(pairs) / max(time.perf_counter() - start, 1e-9)
            services.cleanup.cleanup(task_id, "hard")
            services.store.run("cleanup/delete_pages_by_url_prefix", {"prefix": SYNTHETIC_URL, "batch_size": 5000})
        finally:
            services.close()
    fragments = report.fragments_new + report.fragments_existing + report.fragments_near_duplicate
    total = report.seconds_total
    return PipelineBenchResult(
        corpus=label,
        documents=report.documents,
        fragments=fragments,
        pairs_judged=report.pairs_judged,
        seconds_total=total,
        seconds_in_models=report.seconds_in_models,
        share_in_models=report.seconds_in_models / total if total else 0.0,
        documents_per_second=report.documents / total,
        fragments_per_second=fragments / total,
        pairs_per_second=report.pairs_judged / total,
        raw_judge_pairs_per_second=len(pairs) / raw_seconds if raw_seconds else 0.0,
        compared_judges_pairs_per_second=compared,
    )
