"""Candidate ranking with category weights: small handmade vectors, no model (pure code, no database)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from lyra.core.errors import InvalidInputError
from lyra.ml.protocols import FloatArray
from lyra.ml.ranking import CandidateRanker, RankedCandidate

QUERY = "vitamin d fractures"


def unit(rows: list[list[float]]) -> FloatArray:
    arr = np.asarray(rows, dtype=np.float32)
    return arr / np.linalg.norm(arr, axis=1, keepdims=True)


QUERY_VECTOR = unit([[1, 0, 0]])[0]


class FixedReranker:
    """A stand-in cross-encoder: a fixed logit per document text."""

    def __init__(self, logits: dict[str, float]) -> None:
        self.logits = logits

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        return [self.logits[d] for d in documents]


def rank(
    texts: list[str],
    vectors: FloatArray,
    weights: Sequence[float] | None = None,
    *,
    reranker: FixedReranker | None = None,
    top_k: int | None = None,
) -> list[RankedCandidate]:
    ranker = CandidateRanker(bm25_top_n=10, reranker=reranker)
    return ranker.rank(QUERY, QUERY_VECTOR, texts, vectors, top_k or len(texts), weights=weights)


def order(ranked: list[RankedCandidate]) -> list[int]:
    return [c.index for c in ranked]


# Two equally relevant candidates (same text, same vector) and unrelated ones. (With fewer documents BM25Okapi's
# inverse document frequency turns negative for words in more than half of them.)
TWINS = [
    "vitamin d reduces fractures",
    "vitamin d reduces fractures",
    "rain falls in spain",
    "snow in norway",
    "wind over the sea",
]
TWIN_VECTORS = unit([[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 1]])


@pytest.mark.parametrize(("weights", "first"), [([0.30, 0.95, 1, 1, 1], 1), ([0.95, 0.30, 1, 1, 1], 0)])
def test_equal_relevance_puts_the_higher_category_weight_first(weights: list[float], first: int) -> None:
    ranked = rank(TWINS, TWIN_VECTORS, weights)
    assert order(ranked)[:2] == [first, 1 - first]
    best, second = ranked[0], ranked[1]
    assert (best.bm25, best.cosine) == (second.bm25, second.cosine) == (1.0, pytest.approx(1.0))
    relevance = 0.3 * best.bm25 + 0.7 * best.cosine
    assert best.score == pytest.approx(relevance * 0.95)
    assert second.score == pytest.approx(relevance * 0.30)
    assert (best.category_weight, second.category_weight) == (0.95, 0.30)


def test_a_weight_of_zero_sends_a_candidate_to_the_bottom() -> None:
    texts = [
        "vitamin d reduces fractures in older adults",  # the best match, from a blocked domain
        "vitamin d and bone health",
        "fractures in older adults",
        "calcium intake and bones",
    ]
    vectors = unit([[1, 0, 0], [0.8, 0.2, 0], [0.6, 0.4, 0], [0.5, 0.5, 0]])
    unweighted = rank(texts, vectors)
    assert order(unweighted)[0] == 0
    ranked = rank(texts, vectors, [0.0, 0.4, 0.4, 0.4])
    assert order(ranked)[-1] == 0
    assert ranked[-1].score == 0.0
    assert order(ranked)[:3] == [i for i in order(unweighted) if i != 0]


def test_no_weights_rank_exactly_like_weights_of_one() -> None:
    rng = np.random.default_rng(11)
    words = ["vitamin", "d", "fractures", "bone", "calcium", "rain", "older", "adults", "risk", "trial"]
    texts = [" ".join(rng.choice(words, size=5)) for _ in range(12)]
    vectors = unit(rng.normal(size=(12, 3)).tolist())  # some cosines, and so some relevances, are negative
    unweighted = rank(texts, vectors)
    ones = rank(texts, vectors, [1.0] * 12)
    assert [(c.index, c.bm25, c.cosine, c.score) for c in unweighted] == [
        (c.index, c.bm25, c.cosine, c.score) for c in ones
    ]
    assert all(c.category_weight == 1.0 for c in unweighted)
    for c in unweighted:  # with every weight 1.0 the score is the fused relevance itself
        assert c.score == pytest.approx(0.3 * c.bm25 + 0.7 * c.cosine, abs=1e-6)


def test_a_lower_weight_never_raises_a_negative_relevance() -> None:
    texts = ["rain falls in spain", "snow in norway"]
    vectors = unit([[-1, 1, 0], [0, 0, 1]])  # cosine -0.71 and 0: relevance below and at zero
    ranked = {c.index: c for c in rank(texts, vectors, [0.5, 0.5])}
    unweighted = {c.index: c for c in rank(texts, vectors)}
    assert unweighted[0].score < 0
    assert ranked[0].score == pytest.approx(unweighted[0].score * 1.5)
    assert ranked[0].score < unweighted[0].score
    assert order(rank(texts, vectors, [0.5, 0.5])) == [1, 0]


@pytest.mark.parametrize(
    ("weights", "reason"),
    [
        ([1.0] * 4, "expected 5 weights, one per text, got 4"),
        ([1.0] * 6, "expected 5 weights, one per text, got 6"),
        ([[1.0]] * 5, "expected 5 weights, one per text, got an array of shape (5, 1)"),
        ([1.0, -0.1, 1.0, 1.0, 1.0], "weights[1] is -0.1"),
        ([1.0, 1.0, 1.5, 1.0, 1.0], "weights[2] is 1.5"),
        ([math.nan, 1.0, 1.0, 1.0, 1.0], "weights[0] is nan"),
    ],
)
def test_wrong_weights_are_refused_naming_the_field(weights: list[float], reason: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        rank(TWINS, TWIN_VECTORS, weights)
    assert caught.value.field == "weights"
    assert reason in caught.value.reason


def test_weights_for_an_empty_candidate_list_must_be_empty_too() -> None:
    empty = np.zeros((0, 3), dtype=np.float32)
    ranker = CandidateRanker()
    assert ranker.rank(QUERY, QUERY_VECTOR, [], empty, 3, weights=[]) == []
    with pytest.raises(InvalidInputError) as caught:
        ranker.rank(QUERY, QUERY_VECTOR, [], empty, 3, weights=[1.0])
    assert caught.value.field == "weights"


# -- with a reranker: sigmoid(logit) * weight ---------------------------------------------------------------------

RERANK_TEXTS = [
    "vitamin d reduces fractures",
    "vitamin d and fractures",
    "vitamin d studies",
    "rain falls in spain",
    "snow in norway",
]
RERANK_VECTORS = unit([[1, 0, 0], [0.9, 0.1, 0], [0.8, 0.2, 0], [0, 1, 0], [0, 0, 1]])
UNRELATED = {RERANK_TEXTS[3]: -10.0, RERANK_TEXTS[4]: -10.0}


def test_the_reranker_orders_by_sigmoid_of_its_logit_times_the_weight() -> None:
    # All logits negative. Multiplying raw logits would favour the low-weight candidate (-0.5 * 0.3 = -0.15 beats
    # -1.0 * 1.0); after the sigmoid, 0.269 * 1.0 beats 0.378 * 0.3.
    reranker = FixedReranker({RERANK_TEXTS[0]: -0.5, RERANK_TEXTS[1]: -1.0, RERANK_TEXTS[2]: -4.0, **UNRELATED})
    ranked = rank(RERANK_TEXTS, RERANK_VECTORS, [0.3, 1.0, 1.0, 1.0, 1.0], reranker=reranker, top_k=3)
    assert order(ranked) == [1, 0, 2]
    assert [c.rerank for c in ranked] == [-1.0, -0.5, -4.0]  # the raw logits are reported


def test_the_reranker_order_stands_when_weights_are_equal_or_absent() -> None:
    # Fused, candidate 1 comes first (the shorter text scores higher in BM25), then 0, then 2. The reranker says
    # 0, 1, 2. sigmoid(40) and sigmoid(50) are both 1.0 in floating point, so the raw logit has to decide 0 vs 1.
    assert order(rank(RERANK_TEXTS, RERANK_VECTORS, top_k=3)) == [1, 0, 2]
    reranker = FixedReranker({RERANK_TEXTS[0]: 50.0, RERANK_TEXTS[1]: 40.0, RERANK_TEXTS[2]: -3.0, **UNRELATED})
    assert order(rank(RERANK_TEXTS, RERANK_VECTORS, reranker=reranker, top_k=3)) == [0, 1, 2]
    assert order(rank(RERANK_TEXTS, RERANK_VECTORS, [0.5] * 5, reranker=reranker, top_k=3)) == [0, 1, 2]
