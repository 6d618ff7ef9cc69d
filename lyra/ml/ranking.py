"""Candidate ranking for (claim, fragment) pairs: BM25 → embedding similarity → optional cross-encoder reranker.

Only the top-k fragments per claim reach the NLI judge, so judging cost grows with k, not with corpus size.

Scores. For each candidate fragment of the pool (the BM25 top-n and the embedding top-n):

* relevance ``r = w_bm25 * bm25_norm + w_emb * cosine``, with ``bm25_norm`` the BM25 score min-max normalised
  over the pool to [0, 1] and ``w_bm25``, ``w_emb`` from the settings (0.3 and 0.7 by default);
* ``score = r * category_weight`` — the weight (0..1) of the fragment's domain category,
  ``DomainPolicy.weight(category)``; every weight is 1.0 when the caller gives none. Cosine can be negative, and
  multiplying a negative relevance by a weight below 1 would *raise* it, so a negative ``r`` is scaled by
  ``2 - category_weight`` instead. Both cases are ``score = r - (1 - category_weight) * |r|``: a lower weight never
  raises a score, a weight of 1 leaves ``r`` unchanged, and a weight of 0 scores at most 0;
* without a reranker the candidates are ordered by ``score``. With one, the ``max(3k, k)`` best by ``score`` are
  rescored by the cross-encoder and ordered by ``sigmoid(rerank) * category_weight``. Cross-encoder scores are
  logits (any real number, often negative), so the sigmoid maps them to (0, 1) before the weight is applied;
  ties are broken by the raw rerank score, then by ``score``.

Categories weight ranking only; they never enter confidence (decision record 0007).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from lyra.core.errors import InvalidInputError
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
    """One candidate kept by :meth:`CandidateRanker.rank` (formulas in the module docstring).

    ``score = r * category_weight`` with ``r = w_bm25 * bm25 + w_emb * cosine`` (``r - (1 - category_weight) * |r|``
    when ``r`` is negative). Without a reranker the candidates come in ``score`` order; with one they come in
    ``sigmoid(rerank) * category_weight`` order, and ``rerank`` is the reranker's raw logit.
    """

    index: int  # position in the candidate list given to rank()
    bm25: float  # normalised to [0, 1] over the candidates
    cosine: float
    rerank: float | None  # the reranker's raw score (a logit); None without a reranker
    score: float  # the fused relevance times the category weight
    category_weight: float  # the weight given for this candidate (1.0 when rank() got no weights)


def _sigmoid(x: float) -> float:
    """The logistic function, without overflow for large negative ``x``."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def _category_weights(weights: Sequence[float] | FloatArray | None, count: int) -> npt.NDArray[np.float64]:
    """One weight per text as float64, all 1.0 for ``None``; :class:`InvalidInputError` (``weights``) otherwise."""
    if weights is None:
        return np.ones(count, dtype=np.float64)
    hint = "give one category weight (0..1) per text, e.g. DomainPolicy.weight(category)"
    try:
        values = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError("weights", "category weights must be numbers", hint=hint) from None
    if values.ndim != 1 or len(values) != count:
        got = len(values) if values.ndim == 1 else f"an array of shape {values.shape}"
        raise InvalidInputError("weights", f"expected {count} weights, one per text, got {got}", hint=hint)
    outside = np.flatnonzero(~((values >= 0.0) & (values <= 1.0)))  # NaN is outside too
    if len(outside):
        first = int(outside[0])
        raise InvalidInputError(
            "weights", f"weights[{first}] is {float(values[first])}; a category weight lies in [0, 1]", hint=hint
        )
    return values


def _normalise(values: FloatArray) -> FloatArray:
    if len(values) == 0:
        return values
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-12:
        return np.ones_like(values) if high > 0 else np.zeros_like(values)
    return (values - low) / (high - low)


class CandidateRanker:
    """Three stages with fused scores, weights from settings (categories: decision record 0007)."""

    def __init__(
        self, bm25_top_n: int = 100, weight_bm25: float = 0.3, weight_embedding: float = 0.7, reranker: Any = None
    ) -> None:
        self.bm25_top_n = bm25_top_n
        self.weight_bm25 = weight_bm25
        self.weight_embedding = weight_embedding
        self.reranker = reranker

    def rank(
        self,
        query: str,
        query_vector: FloatArray,
        texts: Sequence[str],
        vectors: FloatArray,
        top_k: int,
        *,
        weights: Sequence[float] | FloatArray | None = None,
    ) -> list[RankedCandidate]:
        """The ``top_k`` best of ``texts`` for ``query``, best first (scores in the module docstring).

        ``weights`` gives the category weight (0..1) of each text, in the order of ``texts``; ``None`` weighs every
        text 1.0, which ranks exactly as an unweighted ranking. A wrong length or a weight outside [0, 1] raises
        :class:`~lyra.core.errors.InvalidInputError` for the field ``weights``.
        """
        category_weights = _category_weights(weights, len(texts))
        if not texts:
            return []
        from rank_bm25 import BM25Okapi

        corpus = [tokenize(t) or ["_"] for t in texts]
        bm25 = np.asarray(BM25Okapi(corpus).get_scores(tokenize(query)), dtype=np.float32)
        stage1 = np.argsort(-bm25)[: self.bm25_top_n]
        # Passages that share no word with the claim still get a chance through their embedding.
        cos_all = vectors @ query_vector
        semantic = np.argsort(-cos_all)[: self.bm25_top_n]
        pool = np.unique(np.concatenate([stage1, semantic]))
        bm25_norm = _normalise(bm25[pool])
        cos = cos_all[pool]
        relevance = self.weight_bm25 * bm25_norm + self.weight_embedding * cos
        # In the relevance's own dtype: a weight of 1.0 then multiplies exactly, so no weights ranks as before.
        pool_weights = category_weights[pool].astype(relevance.dtype)
        fused = np.where(relevance >= 0, relevance * pool_weights, relevance * (2 - pool_weights))
        order = np.argsort(-fused)
        rerank_scores: dict[int, float] = {}
        if self.reranker is not None:
            shortlist = [int(pool[i]) for i in order[: max(top_k * 3, top_k)]]
            scores = self.reranker.score(query, [texts[i] for i in shortlist])
            rerank_scores = dict(zip(shortlist, scores, strict=True))

            def reranked(i: int) -> tuple[float, float]:
                idx = int(pool[i])
                logit = float(rerank_scores[idx])
                return -_sigmoid(logit) * float(category_weights[idx]), -logit

            order = np.asarray(sorted(order[: len(shortlist)], key=reranked))
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
                    category_weight=float(category_weights[idx]),
                )
            )
        return out


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder reranker (e.g. ``cross-encoder/ms-marco-MiniLM-L-6-v2``).

    :meth:`score` returns raw logits: the model is loaded with an identity activation, whatever activation its
    saved configuration names, so that :meth:`CandidateRanker.rank` applies its sigmoid exactly once.
    """

    def __init__(self, model: str) -> None:
        self.model_id = model
        self._model: Any = None
        self._lock = threading.Lock()

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        with self._lock:
            if self._model is None:
                import torch
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(self.model_id, device="cpu", activation_fn=torch.nn.Identity())
        return [float(s) for s in self._model.predict([(query, d) for d in documents])]
