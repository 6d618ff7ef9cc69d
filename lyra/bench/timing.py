"""Timing helpers shared by the benchmarks: model calls counted apart from the rest of an ingest."""

from __future__ import annotations

import time
from collections.abc import Sequence

from pydantic import BaseModel

from lyra.bootstrap import Services
from lyra.ml.cache import CachedJudge
from lyra.ml.protocols import Embedder, FloatArray, NLIJudge, NLIResult
from lyra.sources.local_files import SourceDocument


class IngestRate(BaseModel):
    pages: int
    pages_new: int
    fragments: int
    pairs_judged: int
    seconds_total: float
    seconds_in_models: float  # the IngestReport's own figure
    seconds_embedding: float
    seconds_judging: float  # the stance judge itself (cache misses)
    seconds_other: float  # writes, dedup (FAISS), ranking, caches
    pages_per_second: float
    fragments_per_second: float


class TimedEmbedder:
    """An embedder that adds up the seconds spent in ``embed``."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.seconds = 0.0

    def embed(self, texts: Sequence[str]) -> FloatArray:
        start = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - start


class TimedJudge:
    """A stance judge that adds up the seconds spent in ``judge``."""

    def __init__(self, inner: NLIJudge) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.seconds = 0.0

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        start = time.perf_counter()
        try:
            return self.inner.judge(pairs)
        finally:
            self.seconds += time.perf_counter() - start


def measure_ingest(services: Services, documents: Sequence[SourceDocument], task_id: str) -> IngestRate:
    """Ingest ``documents`` into the (existing) task through the real path, with embedding and judging timed."""
    ingest = services.ingest
    embedder = TimedEmbedder(ingest.embedder)
    ingest.embedder = embedder
    judge: TimedJudge | None = None
    if isinstance(ingest.judge, CachedJudge):
        judge = TimedJudge(ingest.judge.judge_impl)
        ingest.judge.judge_impl = judge
    try:
        report = ingest.ingest_documents(documents, task_id)
    finally:
        ingest.embedder = embedder.inner
        if judge is not None and isinstance(ingest.judge, CachedJudge):
            ingest.judge.judge_impl = judge.inner
    fragments = report.fragments_new + report.fragments_existing + report.fragments_near_duplicate
    total = report.seconds_total
    judging = judge.seconds if judge is not None else max(report.seconds_in_models - embedder.seconds, 0.0)
    return IngestRate(
        pages=report.documents,
        pages_new=report.pages_new,
        fragments=fragments,
        pairs_judged=report.pairs_judged,
        seconds_total=total,
        seconds_in_models=report.seconds_in_models,
        seconds_embedding=embedder.seconds,
        seconds_judging=judging,
        seconds_other=max(total - embedder.seconds - judging, 0.0),
        pages_per_second=report.documents / total if total else 0.0,
        fragments_per_second=fragments / total if total else 0.0,
    )
