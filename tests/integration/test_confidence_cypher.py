"""The Cypher aggregation on the live Neo4j agrees with the reference and keeps the invariants."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lyra.bootstrap import Services
from lyra.models.confidence import EdgeEvidence, beta_stats, reference_alpha_beta

from .helpers import seed_fragments, seed_task, write_edges

pytestmark = pytest.mark.neo4j

edge_lists = st.lists(
    st.lists(
        st.builds(
            EdgeEvidence,
            relation=st.sampled_from(["SUPPORTS", "REFUTES", "NEUTRAL"]),
            nli_confidence=st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
            edge_human_corrected=st.booleans(),
        ),
        max_size=12,
    ),
    min_size=1,
    max_size=6,
)
live = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
CATEGORIES = ["academic", "government", "unverified", "low", "blocked"]


class Writer:
    """Writes each example as a fresh task (one claim per edge list) in the live database."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.counter = 0
        self.fragments = seed_fragments(services, 12)

    def materials(self, lists: list[list[EdgeEvidence]], categories: list[str] | None = None) -> list:  # type: ignore[type-arg]
        self.counter += 1
        task_id = f"prop_{self.counter}"
        claims = seed_task(self.services, task_id, [f"claim {i}" for i in range(len(lists))])
        for claim_id, edges in zip(claims, lists, strict=True):
            if edges:
                write_edges(self.services, claim_id, self.fragments, edges, categories)
        by_id = {c.claim_id: c for c in self.services.materials.claim_confidences(task_id)}
        return [by_id[c] for c in claims]


@pytest.fixture
def writer(graph: Services) -> Writer:
    return Writer(graph)


def test_claim_without_edges_has_the_prior(writer: Writer) -> None:
    (c,) = writer.materials([[]])
    assert (c.alpha, c.beta, c.confidence, c.controversy, c.evidence_count) == (1.0, 1.0, 0.5, 0.0, 0)
    assert c.uncertainty == pytest.approx(math.sqrt(1 / 12))


@live
@given(edge_lists)
def test_cypher_and_reference_agree(writer: Writer, lists: list[list[EdgeEvidence]]) -> None:
    for got, edges in zip(writer.materials(lists), lists, strict=True):
        want = beta_stats(reference_alpha_beta(edges))
        for field in ("alpha", "beta", "confidence", "uncertainty", "controversy"):
            assert abs(getattr(got, field) - getattr(want, field)) <= 1e-9, field
        assert got.evidence_count == want.evidence_count
        assert got.neutral_count == sum(e.relation == "NEUTRAL" for e in edges)
        assert 0.0 < got.confidence < 1.0
        assert 0.0 <= got.controversy <= 0.5
        assert got.uncertainty <= math.sqrt(1 / 12) + 1e-12


@live
@given(edge_lists)
def test_swapping_relations_mirrors_confidence_in_cypher(writer: Writer, lists: list[list[EdgeEvidence]]) -> None:
    other = {"SUPPORTS": "REFUTES", "REFUTES": "SUPPORTS", "NEUTRAL": "NEUTRAL"}
    mirrored = [
        [EdgeEvidence(other[e.relation], e.nli_confidence, e.edge_human_corrected) for e in lst] for lst in lists
    ]
    for a, b in zip(writer.materials(lists), writer.materials(mirrored), strict=True):
        assert b.confidence == pytest.approx(1 - a.confidence, abs=1e-9)
        assert b.uncertainty == pytest.approx(a.uncertainty, abs=1e-9)
        assert b.controversy == pytest.approx(a.controversy, abs=1e-9)


@live
@given(edge_lists, st.randoms(use_true_random=False))
def test_write_order_and_domain_categories_change_nothing(
    writer: Writer, lists: list[list[EdgeEvidence]], rnd: random.Random
) -> None:
    shuffled = [rnd.sample(lst, len(lst)) for lst in lists]
    cats = rnd.sample(CATEGORIES, len(CATEGORIES))
    first = writer.materials(lists, ["academic"])
    second = writer.materials(shuffled, cats)
    for a, b in zip(first, second, strict=True):
        for field in ("alpha", "beta", "confidence", "uncertainty", "controversy", "evidence_count"):
            assert getattr(a, field) == pytest.approx(getattr(b, field), abs=1e-9)


@live
@given(edge_lists, st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=4))
def test_neutral_edges_change_nothing_in_cypher(
    writer: Writer, lists: list[list[EdgeEvidence]], neutral: list[float]
) -> None:
    trimmed = [lst[:8] for lst in lists]
    padded = [[*lst, *(EdgeEvidence("NEUTRAL", w) for w in neutral)] for lst in trimmed]
    for a, b in zip(writer.materials(trimmed), writer.materials(padded), strict=True):
        assert (
            a.alpha,
            a.beta,
            a.confidence,
            a.uncertainty,
            a.controversy,
            a.evidence_count,
        ) == pytest.approx((b.alpha, b.beta, b.confidence, b.uncertainty, b.controversy, b.evidence_count), abs=1e-12)


@live
@given(edge_lists, st.floats(min_value=0, max_value=1))
def test_more_support_never_lowers_and_more_refutation_never_raises(
    writer: Writer, lists: list[list[EdgeEvidence]], w: float
) -> None:
    base = [lst[:10] for lst in lists]
    more_support = [[*lst, EdgeEvidence("SUPPORTS", w)] for lst in base]
    more_refute = [[*lst, EdgeEvidence("REFUTES", w)] for lst in base]
    for b, s, r in zip(
        writer.materials(base), writer.materials(more_support), writer.materials(more_refute), strict=True
    ):
        assert s.confidence >= b.confidence - 1e-12
        assert r.confidence <= b.confidence + 1e-12


def test_human_corrected_edge_weighs_one_in_cypher(writer: Writer) -> None:
    (c,) = writer.materials([[EdgeEvidence("REFUTES", 0.3, edge_human_corrected=True), EdgeEvidence("SUPPORTS", 0.3)]])
    assert (c.alpha, c.beta) == pytest.approx((1.3, 2.0))
