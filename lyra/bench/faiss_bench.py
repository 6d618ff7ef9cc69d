"""Benchmark: FAISS near-duplicate lookup vs a brute-force numpy scan, side by side on the same vectors."""

from __future__ import annotations

import time

import numpy as np
from pydantic import BaseModel

from lyra.ml.vector_index import FragmentIndex


class FaissBenchResult(BaseModel):
    fragments: int
    dimension: int
    queries: int
    kind: str
    build_seconds: float
    faiss_query_seconds: float
    numpy_query_seconds: float
    speedup: float
    faiss_recall_of_planted_duplicates: float
    numpy_recall_of_planted_duplicates: float
    index_memory_mb: float
    vectors_memory_mb: float
    faiss_ms_per_single_query: float
    numpy_ms_per_single_query: float


def _unit(x: np.ndarray) -> np.ndarray:
    normalised: np.ndarray = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return normalised


def run_faiss_bench(
    fragments: int = 100_000,
    dimension: int = 384,
    queries: int = 1000,
    threshold: float = 0.95,
    kind: str = "hnsw",
    seed: int = 11,
) -> FaissBenchResult:
    """Index ``fragments`` random unit vectors; query ``queries`` noisy copies of known ones (planted
    near-duplicates, cosine ≈ 0.98) and count how often each method finds the original above ``threshold``."""
    rng = np.random.default_rng(seed)
    vectors = _unit(rng.normal(size=(fragments, dimension)).astype(np.float32))
    ids = [f"frg_{i:07d}" for i in range(fragments)]
    targets = rng.choice(fragments, size=queries, replace=False)
    noise = rng.normal(size=(queries, dimension)).astype(np.float32)
    probes = _unit(vectors[targets] + 0.2 * _unit(noise))

    start = time.perf_counter()
    index = FragmentIndex(dimension, None, kind=kind)
    index.add(ids, vectors)
    build = time.perf_counter() - start

    start = time.perf_counter()
    found = index.near_duplicates(probes, threshold)
    faiss_seconds = time.perf_counter() - start
    faiss_hits = sum(1 for hit, t in zip(found, targets, strict=True) if hit is not None and hit[0] == ids[t])

    start = time.perf_counter()
    numpy_hits = 0
    for begin in range(0, queries, 100):  # chunked so the score matrix stays small
        scores = probes[begin : begin + 100] @ vectors.T
        best = scores.argmax(axis=1)
        for row, (b, t) in enumerate(zip(best, targets[begin : begin + 100], strict=True)):
            if scores[row, b] >= threshold and b == t:
                numpy_hits += 1
    numpy_seconds = time.perf_counter() - start

    # The ingest path asks one passage at a time: the same two methods, query by query.
    single = min(queries, 200)
    start = time.perf_counter()
    for q in range(single):
        index.near_duplicates(probes[q : q + 1], threshold)
    faiss_single = (time.perf_counter() - start) / single
    start = time.perf_counter()
    for q in range(single):
        scores_one = vectors @ probes[q]
        int(scores_one.argmax())
    numpy_single = (time.perf_counter() - start) / single

    return FaissBenchResult(
        fragments=fragments,
        dimension=dimension,
        queries=queries,
        kind=kind,
        build_seconds=build,
        faiss_query_seconds=faiss_seconds,
        numpy_query_seconds=numpy_seconds,
        speedup=numpy_seconds / faiss_seconds if faiss_seconds else float("inf"),
        faiss_recall_of_planted_duplicates=faiss_hits / queries,
        numpy_recall_of_planted_duplicates=numpy_hits / queries,
        index_memory_mb=index.memory_bytes() / 1e6,
        vectors_memory_mb=vectors.nbytes / 1e6,
        faiss_ms_per_single_query=faiss_single * 1000,
        numpy_ms_per_single_query=numpy_single * 1000,
    )
