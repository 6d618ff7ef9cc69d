"""Candidate ranking for (claim, fragment) pairs: BM25 → embedding similarity → optional cross-encoder reranker.

Only the top-k fragments per claim reach the NLI judge, so judging cost grows with k, not with corpus size.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lyra.ml.protocols import FloatArray

_TOKEN = re.compile(r"[a-z0-9]+(?:[.-][a-z0-9]+)*")
_STOP = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "than",
        "then",
        "there",
        "these",
        "those",
        "which",
        "who",
        "whom",
        "whose",
    )
)


def tokenize(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP]


@dataclass(frozen=True)
class RankedCandidate:
    index: int  # position in the candidate list given to rank()
    bm25: float  # normalised to [0, 1] over the candidates
    cosine: float
    rerank: float | None
    score: float


def _normalise(values: FloatArray) -> FloatArray:
    if len(values) == 0:
        return values
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-12:
        return np.ones_like(values) if high > 0 else np.zeros_like(values)
    return (values - low) / (high - low)


class CandidateRanker:
    """The seeds' three stages with fused scores (weights from settings)."""

    def __init__(
        self, bm25_top_n: int = 100, weight_bm25: float = 0.3, weight_embedding: float = 0.7, reranker: Any = None
    ) -> None:
        self.bm25_top_n = bm25_top_n
        self.weight_bm25 = weight_bm25
        self.weight_embedding = weight_embedding
        self.reranker = reranker

    def rank(
        self, query: str, query_vector: FloatArray, texts: Sequence[str], vectors: FloatArray, top_k: int
    ) -> list[RankedCandidate]:
        from rank_bm25 import BM25Okapi

        if not texts:
            return []
        corpus = [tokenize(t) or ["_"] for t in texts]
        bm25 = np.asarray(BM25Okapi(corpus).get_scores(tokenize(query)), dtype=np.float32)
        stage1 = np.argsort(-bm25)[: self.bm25_top_n]
        # Passages that share no word with the claim still get a chance through their embedding.
        cos_all = vectors @ query_vector
        semantic = np.argsort(-cos_all)[: self.bm25_top_n]
        pool = np.unique(np.concatenate([stage1, semantic]))
        bm25_norm = _normalise(bm25[pool])
        cos = cos_all[pool]
        fused = self.weight_bm25 * bm25_norm + self.weight_embedding * cos
        order = np.argsort(-fused)
        rerank_scores: dict[int, float] = {}
        if self.reranker is not None:
            shortlist = [int(pool[i]) for i in order[: max(top_k * 3, top_k)]]
            scores = self.reranker.score(query, [texts[i] for i in shortlist])
            rerank_scores = dict(zip(shortlist, scores, strict=True))
            order = np.asarray(sorted(order[: len(shortlist)], key=lambda i: -rerank_scores[int(pool[i])]))
        out: list[RankedCandidate] = []
        for i in order[:top_k]:
            idx = int(pool[i])
            out.append(
                RankedCandidate(
                    index=idx,
                    bm25=float(bm25_norm[i]),
                    cosine=float(cos[i]),
                    rerank=rerank_scores.get(idx),
                    score=float(fused[i]),
                )
            )
        return out


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder reranker (e.g. ``cross-encoder/ms-marco-MiniLM-L-6-v2``)."""

    def __init__(self, model: str) -> None:
        self.model_id = model
        self._model: Any = None
        self._lock = threading.Lock()

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        with self._lock:
            if self._model is None:
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(self.model_id, device="cpu")
        return [float(s) for s in self._model.predict([(query, d) for d in documents])]
