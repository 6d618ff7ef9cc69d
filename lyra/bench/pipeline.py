"""Benchmark: pipeline throughput, and how much of its wall time is spent inside the models.

Runs the real pipeline (real Neo4j, real offline models) on a corpus into a throw-away task, with an
empty NLI cache and FAISS index in a temporary state folder, then judges the same pairs again with a fresh judge
whose caches are cold (a new, empty answer cache of the LLM's answers and no verdict cache: the pairs are new to
it, as at the first ingest), to measure the raw judge in the same run. Each timed judge reports what it cost:
seconds, LLM calls and prompt tokens evaluated per pair (llama.cpp's own count; the tokens it reused from its
prefix cache are counted apart) and the share of pairs it put to the LLM.
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
from lyra.core.settings import ExperimentSettings, Settings, load_experiment_settings
from lyra.graph.connection import resolve_connection
from lyra.ml.factory import Models, judge_settings
from lyra.ml.protocols import NLIJudge


class JudgeCost(BaseModel):
    """One judge timed on the same pairs with cold caches."""

    judge: str
    pairs: int
    seconds: float
    pairs_per_second: float
    llm_calls_per_pair: float | None = None  # None: the LLM does not count its usage (e.g. Ollama)
    prompt_tokens_evaluated_per_pair: float | None = None
    prompt_tokens_cached_per_pair: float | None = None
    llm_pair_share: float | None = None  # pairs put to the LLM / pairs (None: the judge does not say)


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
    raw_judge_pairs_per_second: float  # the configured judge with cold caches (see the module docstring)
    compared_judges_pairs_per_second: dict[str, float] = {}  # other judges, timed on the same pairs in this run
    ingest_llm_calls_per_pair: float | None = None
    ingest_prompt_tokens_per_pair: float | None = None
    judges: list[JudgeCost] = []  # the configured judge first, then the compared ones


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


def time_cold_judge(
    models: Models,
    settings: Settings,
    experiment: ExperimentSettings,
    name: str,
    pairs: Sequence[tuple[str, str]],
) -> JudgeCost:
    """Judge ``pairs`` with a new judge of ``settings`` and the variant switches ``experiment`` (its state folder:
    a fresh, empty one, so no answer or verdict is cached), sharing ``models``' loaded LLM and embedder, and count
    what it cost."""
    with tempfile.TemporaryDirectory(prefix="lyra-cold-") as state:
        cold = models.sharing(settings.model_copy(update={"state_dir": Path(state)}), experiment)
        judge: NLIJudge = cold.stance_judge()
        usage = getattr(cold.llm, "usage", None) if _uses_llm(settings) else None
        before = usage.snapshot() if usage is not None else None
        start = time.perf_counter()
        judge.judge(pairs)
        seconds = time.perf_counter() - start
        spent = usage.since(before) if usage is not None and before is not None else None
        stats = getattr(judge, "stats", None)
    n = max(len(pairs), 1)
    share = stats.llm_pairs / max(stats.pairs, 1) if stats is not None else None
    if spent is None and settings.models.nli_backend == "trained" and not settings.models.stance_use_llm:
        share = 0.0
    return JudgeCost(
        judge=name,
        pairs=len(pairs),
        seconds=seconds,
        pairs_per_second=len(pairs) / seconds if seconds > 0 else 0.0,
        llm_calls_per_pair=spent.calls / n if spent is not None else (0.0 if share == 0.0 else None),
        prompt_tokens_evaluated_per_pair=spent.prompt_tokens_evaluated / n if spent is not None else None,
        prompt_tokens_cached_per_pair=spent.prompt_tokens_cached / n if spent is not None else None,
        llm_pair_share=share,
    )


def run_pipeline_bench(
    settings: Settings,
    corpus: Path,
    claims: list[str],
    label: str,
    compare: Sequence[str] = (),
    judge_pairs: int | None = None,
) -> PipelineBenchResult:
    """``judge_pairs``: time the cold judges on only the first N of the ingest's pairs (all: None)."""
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
            usage = getattr(services.models.llm, "usage", None) if _uses_llm(bench_settings) else None
            before = usage.snapshot() if usage is not None else None
            report = services.ingest.ingest([corpus], task_id, claims)
            spent = usage.since(before) if usage is not None and before is not None else None
            # the same pairs again through a fresh judge with cold caches: the raw judge in this run
            rows = services.store.run("evidence/task_pairs", {"task_id": task_id})
            pairs = [(r["premise"], r["hypothesis"]) for r in rows][:judge_pairs]
            experiment = load_experiment_settings()
            judges = [time_cold_judge(services.models, bench_settings, experiment, "configured", pairs)]
            judges += [
                time_cold_judge(services.models, *judge_settings(bench_settings, variant, experiment), variant, pairs)
                for variant in compare
            ]
            services.cleanup.cleanup(task_id, "hard")
            services.store.run("cleanup/delete_pages_by_url_prefix", {"prefix": SYNTHETIC_URL, "batch_size": 5000})
        finally:
            services.close()
    fragments = report.fragments_new + report.fragments_existing + report.fragments_near_duplicate
    total = report.seconds_total
    judged = max(report.pairs_judged, 1)
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
        raw_judge_pairs_per_second=judges[0].pairs_per_second,
        compared_judges_pairs_per_second={j.judge: j.pairs_per_second for j in judges[1:]},
        ingest_llm_calls_per_pair=spent.calls / judged if spent is not None else None,
        ingest_prompt_tokens_per_pair=spent.prompt_tokens_evaluated / judged if spent is not None else None,
        judges=judges,
    )


def _uses_llm(settings: Settings) -> bool:
    return settings.models.nli_backend == "llm" or (
        settings.models.nli_backend == "trained" and settings.models.stance_use_llm
    )
