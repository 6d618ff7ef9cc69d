"""Claim confidence on the live Neo4j, through the one path that computes it: get_materials
(`MaterialsService.materials` and `.scores`, the Cypher `materials/claim_scores`).

Each example writes its edge lists as claims of a fresh task (every variant an example compares lives in the
same task, so one get_materials call reads them all) and checks true invariants of decision record 0003 and agreement
with the pure-Python reference (`reference_alpha_beta` + `beta_stats`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lyra.bootstrap import Services
from lyra.models.api import MaterialClaim
from lyra.models.confidence import EdgeEvidence, beta_stats, reference_alpha_beta
from lyra.models.graph import DomainCategory
from tests.support.helpers import claim_materials, seed_fragments, seed_task, write_edges

pytestmark = pytest.mark.neo4j

MAX_EDGES = 10  # per claim, before an example adds its extra edges
NUMBERS = ("alpha", "beta", "confidence", "uncertainty", "controversy")
COUNTS = ("evidence_count", "supports_count", "refutes_count", "neutral_count")
CATEGORIES: tuple[DomainCategory, ...] = get_args(DomainCategory)
MIRROR = {"SUPPORTS": "REFUTES", "REFUTES": "SUPPORTS", "NEUTRAL": "NEUTRAL"}

weights = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
edges = st.builds(
    EdgeEvidence,
    relation=st.sampled_from(["SUPPORTS", "REFUTES", "NEUTRAL"]),
    nli_confidence=weights,
    edge_human_corrected=st.booleans(),
)
edge_lists = st.lists(st.lists(edges, max_size=MAX_EDGES), min_size=1, max_size=4)
live = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

EdgeLists = list[list[EdgeEvidence]]


class Writer:
    """Writes edge lists as the claims of a fresh task and reads them back with get_materials."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.counter = 0
        self.fragments = seed_fragments(services, MAX_EDGES + 4)
        self.blocked_fragments = seed_fragments(
            services, MAX_EDGES + 4, prefix="blocked", host="blocked.example.net", domain_category="blocked"
        )

    def materials(
        self,
        lists: EdgeLists,
        categories: Sequence[Sequence[DomainCategory] | None] | None = None,
        evidence_limit: int = 0,
    ) -> list[MaterialClaim]:
        """One claim per edge list, in the order given. `categories`: per claim, the source_domain_category its
        edges carry in turn; a claim given categories takes its fragments from pages of a `blocked` domain."""
        self.counter += 1
        task_id = f"prop_{self.counter}"
        claim_ids = seed_task(self.services, task_id, [f"claim {i}" for i in range(len(lists))])
        for i, (claim_id, claim_edges) in enumerate(zip(claim_ids, lists, strict=True)):
            cats = categories[i] if categories else None
            if claim_edges:
                fragments = self.blocked_fragments if cats else self.fragments
                write_edges(self.services, task_id, claim_id, fragments, claim_edges, cats)
        by_id = {c.claim_id: c for c in claim_materials(self.services, task_id, evidence_limit)}
        assert len(by_id) == len(claim_ids)
        return [by_id[c] for c in claim_ids]


@pytest.fixture
def writer(graph: Services) -> Writer:
    return Writer(graph)


def numbers(claim: MaterialClaim) -> tuple[float, ...]:
    return tuple(getattr(claim, field) for field in NUMBERS)


def counts(claim: MaterialClaim) -> tuple[int, ...]:
    return tuple(getattr(claim, field) for field in COUNTS)


def assert_same_numbers(a: MaterialClaim, b: MaterialClaim, tol: float = 1e-12) -> None:
    for field, x, y in zip(NUMBERS, numbers(a), numbers(b), strict=True):
        assert abs(x - y) <= tol, (field, x, y)


def mirrored(lists: EdgeLists) -> EdgeLists:
    return [[EdgeEvidence(MIRROR[e.relation], e.nli_confidence, e.edge_human_corrected) for e in lst] for lst in lists]


def test_claim_without_edges_has_the_prior(writer: Writer) -> None:
    (c,) = writer.materials([[]])
    assert (c.alpha, c.beta, c.confidence, c.controversy) == (1.0, 1.0, 0.5, 0.0)
    assert c.uncertainty == pytest.approx(math.sqrt(1 / 12), abs=1e-15)
    assert counts(c) == (0, 0, 0, 0)
    assert c.credible_interval_95 == pytest.approx((0.025, 0.975))


def test_errata_table_values_come_out_of_get_materials(writer: Writer) -> None:
    """errata.md item 1: the values the §6.2 formula gives (the seed's table is wrong in two columns)."""
    table = [
        ((0, 0), (1.0, 1.0, 0.5, 0.289, 0.0)),
        ((1, 0), (1.9, 1.0, 0.655, 0.241, 0.0)),
        ((3, 0), (3.7, 1.0, 0.787, 0.171, 0.0)),
        ((3, 1), (3.7, 1.9, 0.661, 0.184, 0.25)),
        ((5, 5), (5.5, 5.5, 0.5, 0.144, 0.5)),
    ]
    lists = [[EdgeEvidence("SUPPORTS", 0.9)] * s + [EdgeEvidence("REFUTES", 0.9)] * r for (s, r), _ in table]
    for c, ((supports, refutes), expected) in zip(writer.materials(lists), table, strict=True):
        assert (round(c.alpha, 2), round(c.beta, 2)) == expected[:2]
        assert (round(c.confidence, 3), round(c.uncertainty, 3), round(c.controversy, 3)) == expected[2:]
        assert (c.supports_count, c.refutes_count, c.evidence_count) == (supports, refutes, supports + refutes)


@live
@given(edge_lists, st.sampled_from([0, 1, 3, 10]))
def test_get_materials_agrees_with_the_reference_and_keeps_the_bounds(
    writer: Writer, lists: EdgeLists, evidence_limit: int
) -> None:
    for got, claim_edges in zip(writer.materials(lists, evidence_limit=evidence_limit), lists, strict=True):
        want = reference_alpha_beta(claim_edges)
        stats = beta_stats(want)
        for field in NUMBERS:
            assert abs(getattr(got, field) - getattr(stats, field)) <= 1e-9, field
        assert counts(got) == (stats.evidence_count, want.supports_count, want.refutes_count, want.neutral_count)
        assert 0.0 < got.confidence < 1.0
        assert 0.0 < got.uncertainty <= math.sqrt(1 / 12) + 1e-12
        assert 0.0 <= got.controversy <= 0.5
        # evidence_limit bounds the list only (checked above: the numbers use every edge)
        assert len(got.evidence) == min(evidence_limit, len(claim_edges))
        assert got.evidence_truncated == (len(claim_edges) > evidence_limit)


@live
@given(edge_lists)
def test_swapping_supports_and_refutes_swaps_alpha_and_beta_and_mirrors_confidence(
    writer: Writer, lists: EdgeLists
) -> None:
    claims = writer.materials(lists + mirrored(lists))
    for a, b in zip(claims[: len(lists)], claims[len(lists) :], strict=True):
        assert (b.alpha, b.beta) == pytest.approx((a.beta, a.alpha), abs=1e-12)
        assert b.confidence == pytest.approx(1 - a.confidence, abs=1e-12)
        assert b.uncertainty == pytest.approx(a.uncertainty, abs=1e-12)
        assert b.controversy == pytest.approx(a.controversy, abs=1e-12)
        assert (b.supports_count, b.refutes_count) == (a.refutes_count, a.supports_count)
        assert (b.evidence_count, b.neutral_count) == (a.evidence_count, a.neutral_count)


@live
@given(edge_lists, st.randoms(use_true_random=False))
def test_writing_the_edges_in_another_order_changes_nothing(
    writer: Writer, lists: EdgeLists, rnd: random.Random
) -> None:
    shuffled = [rnd.sample(lst, len(lst)) for lst in lists]
    claims = writer.materials(lists + shuffled)
    for a, b in zip(claims[: len(lists)], claims[len(lists) :], strict=True):
        assert_same_numbers(a, b)
        assert counts(a) == counts(b)


@live
@given(edge_lists, st.integers(min_value=0, max_value=len(CATEGORIES) - 1))
def test_domain_categories_never_change_the_numbers(writer: Writer, lists: EdgeLists, shift: int) -> None:
    """The edges of the first copy carry no source_domain_category and come from an `academic` domain; those of
    the second carry every category in turn (a rotation per claim) and come from a `blocked` domain."""

    def rotation(k: int) -> list[DomainCategory]:
        return [CATEGORIES[(k + j) % len(CATEGORIES)] for j in range(len(CATEGORIES))]

    categories = [None] * len(lists) + [rotation(shift + i) for i in range(len(lists))]
    claims = writer.materials(lists + lists, categories)
    for a, b in zip(claims[: len(lists)], claims[len(lists) :], strict=True):
        assert_same_numbers(a, b)
        assert counts(a) == counts(b)


@live
@given(edge_lists, st.lists(st.tuples(weights, st.booleans()), min_size=1, max_size=4))
def test_neutral_edges_change_nothing_but_the_neutral_count(
    writer: Writer, lists: EdgeLists, neutral: list[tuple[float, bool]]
) -> None:
    padded = [[*lst, *(EdgeEvidence("NEUTRAL", w, corrected) for w, corrected in neutral)] for lst in lists]
    claims = writer.materials(lists + padded)
    for a, b in zip(claims[: len(lists)], claims[len(lists) :], strict=True):
        assert_same_numbers(a, b)
        assert counts(b)[:3] == counts(a)[:3]
        assert b.neutral_count == a.neutral_count + len(neutral)


@live
@given(edge_lists, weights, st.booleans())
def test_more_support_never_lowers_and_more_refutation_never_raises_confidence(
    writer: Writer, lists: EdgeLists, w: float, corrected: bool
) -> None:
    more_support = [[*lst, EdgeEvidence("SUPPORTS", w, corrected)] for lst in lists]
    more_refute = [[*lst, EdgeEvidence("REFUTES", w, corrected)] for lst in lists]
    claims = writer.materials(lists + more_support + more_refute)
    n = len(lists)
    for base, s, r in zip(claims[:n], claims[n : 2 * n], claims[2 * n :], strict=True):
        assert s.confidence >= base.confidence - 1e-12
        assert r.confidence <= base.confidence + 1e-12
        assert (s.supports_count, r.refutes_count) == (base.supports_count + 1, base.refutes_count + 1)


@live
@given(edge_lists, st.sampled_from(["SUPPORTS", "REFUTES", "NEUTRAL"]), weights)
def test_a_human_corrected_edge_weighs_one_whatever_its_nli_confidence(
    writer: Writer, lists: EdgeLists, relation: str, w: float
) -> None:
    corrected = [[*lst, EdgeEvidence(relation, w, edge_human_corrected=True)] for lst in lists]
    full_weight = [[*lst, EdgeEvidence(relation, 1.0)] for lst in lists]
    claims = writer.materials(corrected + full_weight)
    for a, b in zip(claims[: len(lists)], claims[len(lists) :], strict=True):
        assert_same_numbers(a, b)
        assert counts(a) == counts(b)


def test_a_human_corrected_edge_weighs_one_and_an_uncorrected_one_its_nli_confidence(writer: Writer) -> None:
    (c,) = writer.materials([[EdgeEvidence("REFUTES", 0.3, edge_human_corrected=True), EdgeEvidence("SUPPORTS", 0.3)]])
    assert (c.alpha, c.beta) == pytest.approx((1.3, 2.0), abs=1e-12)
