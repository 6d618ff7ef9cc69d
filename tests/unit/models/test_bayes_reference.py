"""The pure-Python reference of decision record 0003 (no I/O): exact values and true invariants."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lyra.models.confidence import EdgeEvidence, Posterior, beta_stats, reference_alpha_beta

weights = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
edges_strategy = st.lists(
    st.builds(
        EdgeEvidence,
        relation=st.sampled_from(["SUPPORTS", "REFUTES", "NEUTRAL"]),
        nli_confidence=weights,
        edge_human_corrected=st.booleans(),
    ),
    max_size=40,
)


def stats(edges: list[EdgeEvidence]):  # type: ignore[no-untyped-def]
    return beta_stats(reference_alpha_beta(edges))


def swapped(edges: list[EdgeEvidence]) -> list[EdgeEvidence]:
    other = {"SUPPORTS": "REFUTES", "REFUTES": "SUPPORTS", "NEUTRAL": "NEUTRAL"}
    return [EdgeEvidence(other[e.relation], e.nli_confidence, e.edge_human_corrected) for e in edges]


@pytest.mark.parametrize(
    ("supports", "refutes", "expected"),
    [
        # errata.md: the values the §6.2 formula gives (the seed's example table is wrong for two columns)
        (0, 0, (1.0, 1.0, 0.5, 0.289, 0.0)),
        (1, 0, (1.9, 1.0, 0.655, 0.241, 0.0)),
        (3, 0, (3.7, 1.0, 0.787, 0.171, 0.0)),
        (3, 1, (3.7, 1.9, 0.661, 0.184, 0.25)),
        (5, 5, (5.5, 5.5, 0.5, 0.144, 0.5)),
    ],
)
def test_errata_table_values_follow_the_formula(supports: int, refutes: int, expected: tuple[float, ...]) -> None:
    edges = [EdgeEvidence("SUPPORTS", 0.9)] * supports + [EdgeEvidence("REFUTES", 0.9)] * refutes
    s = stats(edges)
    assert (round(s.alpha, 2), round(s.beta, 2)) == expected[:2]
    assert (round(s.confidence, 3), round(s.uncertainty, 3), round(s.controversy, 3)) == expected[2:]
    assert s.evidence_count == supports + refutes


def test_more_evidence_can_raise_uncertainty() -> None:
    """errata.md: Beta(10,1) -> Beta(10,2) raises the standard deviation; not an invariant to test."""
    a = beta_stats(Posterior(10.0, 1.0)).uncertainty
    b = beta_stats(Posterior(10.0, 2.0)).uncertainty
    assert b > a


def test_human_corrected_edge_counts_with_weight_one() -> None:
    s = stats([EdgeEvidence("SUPPORTS", 0.2, edge_human_corrected=True)])
    assert s.alpha == pytest.approx(2.0)


@given(edges_strategy)
def test_swapping_supports_and_refutes_mirrors_confidence(edges: list[EdgeEvidence]) -> None:
    a, b = stats(edges), stats(swapped(edges))
    assert b.confidence == pytest.approx(1 - a.confidence, abs=1e-12)
    assert b.uncertainty == pytest.approx(a.uncertainty, abs=1e-12)
    assert b.controversy == pytest.approx(a.controversy, abs=1e-12)


@given(edges_strategy, st.randoms(use_true_random=False))
def test_edge_order_never_matters(edges: list[EdgeEvidence], rnd) -> None:  # type: ignore[no-untyped-def]
    shuffled = list(edges)
    rnd.shuffle(shuffled)
    a, b = stats(edges), stats(shuffled)
    assert (a.confidence, a.uncertainty, a.controversy) == pytest.approx((b.confidence, b.uncertainty, b.controversy))


@given(edges_strategy, st.lists(weights, max_size=10))
def test_neutral_edges_change_nothing(edges: list[EdgeEvidence], neutral: list[float]) -> None:
    a = stats(edges)
    b = stats(edges + [EdgeEvidence("NEUTRAL", w) for w in neutral])
    assert a == b


@given(edges_strategy, weights)
def test_adding_supports_never_lowers_and_refutes_never_raises(edges: list[EdgeEvidence], w: float) -> None:
    base = stats(edges).confidence
    assert stats([*edges, EdgeEvidence("SUPPORTS", w)]).confidence >= base - 1e-15
    assert stats([*edges, EdgeEvidence("REFUTES", w)]).confidence <= base + 1e-15


@given(edges_strategy)
def test_bounds_hold(edges: list[EdgeEvidence]) -> None:
    s = stats(edges)
    assert 0.0 < s.confidence < 1.0
    assert 0.0 <= s.controversy <= 0.5
    assert 0.0 < s.uncertainty <= math.sqrt(1 / 12) + 1e-15
