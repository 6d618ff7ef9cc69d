"""Independent sources (lyra/services/provenance.py) and the choice of pairs to judge (lyra/services/coverage.py),
as pure functions: property tests against a brute-force definition, and the cases of the issue."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lyra.ml.relevance import relevance, term_overlap
from lyra.services.coverage import ClaimToJudge, FragmentToJudge, own_source_mask, plan_pairs
from lyra.services.provenance import independent_sources, title_key

# ------------------------------------------------------------------------------------------- independent sources


def brute_force_sources(supporting: list[list[Any]]) -> int:
    """The definition read literally: two edges are one source when a chain of shared fragment / page / DOI /
    title+year joins them; count the groups by repeated merging."""
    groups: list[set[str]] = []
    for fragment, pages in supporting:
        keys = {f"f:{fragment}"}
        for page_id, doi, title, year in pages:
            keys.add(f"p:{page_id}")
            if doi:
                keys.add(f"d:{doi.lower()}")
            if title_key(title, year):
                keys.add(f"t:{title_key(title, year)}")
        groups.append(keys)
    merged = True
    while merged:
        merged = False
        for a, b in itertools.combinations(range(len(groups)), 2):
            if groups[a] & groups[b]:
                groups[a] |= groups.pop(b)
                merged = True
                break
    return len(groups)


page_strategy = st.tuples(
    st.sampled_from(["pg1", "pg2", "pg3", "pg4", "pg5"]),
    st.sampled_from([None, "10.1/a", "10.1/A", "10.1/b"]),
    st.sampled_from([None, "A randomised trial of microcredit", "A Randomised Trial of Microcredit!", "Other study"]),
    st.sampled_from([None, 2019, 2020]),
)
supporting_strategy = st.lists(
    st.tuples(st.sampled_from(["f1", "f2", "f3", "f4", "f5", "f6"]), st.lists(page_strategy, max_size=3)),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(supporting_strategy)
def test_independent_sources_is_the_number_of_groups_joined_by_shared_passage_page_doi_or_title(
    supporting: list[tuple[str, list[tuple[str, str | None, str | None, int | None]]]],
) -> None:
    rows = [[f, [list(p) for p in pages]] for f, pages in supporting]
    count = independent_sources(rows)
    assert count == brute_force_sources([[f, pages] for f, pages in supporting])
    assert count <= len(rows)
    assert (count >= 1) == bool(rows)


def test_an_exact_copy_on_two_pages_is_one_source() -> None:
    # one passage (one fragment) found in r02_morocco.txt and dup_morocco_copy.txt
    both = [["pg_orig", None, "r02_morocco", None], ["pg_copy", None, "dup_morocco_copy", None]]
    assert independent_sources([["frg_1", both], ["frg_2", both]]) == 1


def test_the_same_paper_read_as_a_file_and_as_an_abstract_is_one_source() -> None:
    local = ["pg_file", "10.5555/Village.Fund", "Microcredit in Thai villages", 2011]
    abstract = ["pg_s2", "10.5555/village.fund", "Microcredit in Thai Villages", 2011]
    assert independent_sources([["frg_a", [local]], ["frg_b", [abstract]]]) == 1
    no_doi_local = ["pg_file", None, "Microcredit in Thai villages", 2011]
    assert independent_sources([["frg_a", [no_doi_local]], ["frg_b", [abstract]]]) == 1
    other_year = ["pg_s2", None, "Microcredit in Thai villages", 2015]
    assert independent_sources([["frg_a", [no_doi_local]], ["frg_b", [other_year]]]) == 2


def test_a_short_title_like_a_file_name_does_not_merge_sources() -> None:
    assert title_key("notes", 2020) is None
    assert independent_sources([["f1", [["p1", None, "notes", 2020]]], ["f2", [["p2", None, "notes", 2020]]]]) == 2


# ------------------------------------------------------------------------------------------------ pair coverage


def unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


def fragment(fid: str, text: str, vector: np.ndarray, weight: float = 1.0) -> FragmentToJudge:
    return FragmentToJudge(fid, text, vector, weight, "academic")


def test_term_overlap_is_the_share_of_the_claims_content_words_in_the_passage() -> None:
    assert (
        term_overlap("Drug Q lowers blood pressure", "drug Q lowered the pressure of blood") == 0.8
    )  # 4 of 5: no stemming
    assert term_overlap("the of and", "anything") == 0.0


def test_plan_keeps_pairs_at_or_above_the_floor_and_orders_pending_by_priority() -> None:
    claims = [ClaimToJudge("c1", "x", judged={"f2": "SUPPORTS"})]
    fragments = [
        fragment("f1", "a", unit([1, 0]), weight=0.3),
        fragment("f2", "b", unit([1, 0])),
        fragment("f3", "c", unit([1, 0]), weight=0.9),
        fragment("f4", "d", unit([0, 1])),
    ]
    scores = np.asarray([[0.8, 0.8, 0.5, 0.1]], dtype=np.float32)
    own = np.zeros((1, 4), dtype=bool)
    plan = plan_pairs(claims, fragments, scores, own, floor=0.5)
    (coverage,) = plan.coverage
    assert (coverage.candidates, coverage.judged, coverage.pending, coverage.below_floor) == (3, 1, 2, 1)
    # f3: 0.5 * 0.9 = 0.45 before f1: 0.8 * 0.3 = 0.24
    assert [fragments[p.fragment_index].fragment_id for p in plan.pending] == ["f3", "f1"]
    assert plan.existing == {(0, 1): "SUPPORTS"}


def test_a_claim_is_never_planned_against_its_own_source_or_a_near_duplicate_of_it() -> None:
    source = unit([1, 0, 0])
    reworded = unit([1, 0.05, 0])  # cosine 0.9988 with the source
    other = unit([0.6, 0.8, 0])
    fragments = [fragment("src", "s", source), fragment("dup", "d", reworded), fragment("oth", "o", other)]
    vectors = np.vstack([f.vector for f in fragments])
    claims = [ClaimToJudge("c1", "x", source_ids=frozenset({"src"})), ClaimToJudge("c2", "y")]
    own = own_source_mask(claims, fragments, vectors, lambda ids: np.zeros((0, 3), np.float32), 0.95)
    assert own.tolist() == [[True, True, False], [False, False, False]]
    plan = plan_pairs(claims, fragments, np.ones((2, 3), dtype=np.float32), own, floor=0.5)
    planned = {(claims[p.claim_index].claim_id, fragments[p.fragment_index].fragment_id) for p in plan.pending}
    assert planned == {("c1", "oth"), ("c2", "src"), ("c2", "dup"), ("c2", "oth")}
    assert plan.coverage[0].own_source == 2


def test_a_source_fragment_outside_the_task_still_excludes_its_near_duplicates() -> None:
    fragments = [fragment("mine", "m", unit([0, 1]))]
    claims = [ClaimToJudge("c1", "x", source_ids=frozenset({"elsewhere"}))]
    asked: list[list[str]] = []

    def outside(ids: Any) -> np.ndarray:
        asked.append(list(ids))
        return unit([0.01, 1])[None, :]

    own = own_source_mask(claims, fragments, np.vstack([fragments[0].vector]), outside, 0.95)
    assert asked == [["elsewhere"]] and own.tolist() == [[True]]


@settings(max_examples=50, deadline=None)
@given(st.permutations(list(range(6))), st.integers(min_value=1, max_value=5))
def test_the_candidates_do_not_depend_on_the_order_or_grouping_of_fragments(order: list[int], split: int) -> None:
    """What a pair's relevance is depends on the pair alone: ranking the fragments in any order, or a part of them
    first, gives each pair the same score, so the same pairs pass the floor."""
    rng = np.random.default_rng(3)
    texts = [f"microcredit village loans household {w}" for w in ("a", "b", "consumption", "cake", "fund", "x")]
    vectors = np.asarray([unit(list(rng.normal(size=8))) for _ in texts], dtype=np.float32)
    claim_vector = unit(list(rng.normal(size=8)))[None, :]
    claim = ["Microcredit raises household consumption"]
    whole = relevance(claim, claim_vector, texts, vectors, w_emb=0.7, w_terms=0.3)[0]
    shuffled = relevance(claim, claim_vector, [texts[i] for i in order], vectors[order], w_emb=0.7, w_terms=0.3)[0]
    assert np.allclose(shuffled, whole[order])
    part = relevance(claim, claim_vector, texts[:split], vectors[:split], w_emb=0.7, w_terms=0.3)[0]
    assert np.allclose(part, whole[:split])


def test_relevance_of_no_claims_or_no_passages_is_an_empty_matrix() -> None:
    none = np.zeros((0, 4), dtype=np.float32)
    some = np.ones((2, 4), dtype=np.float32) / 2
    assert relevance([], none, [], none, w_emb=0.7, w_terms=0.3).shape == (0, 0)
    assert relevance([], none, ["a", "b"], some, w_emb=0.7, w_terms=0.3).shape == (0, 2)
    assert relevance(["a", "b"], some, [], none, w_emb=0.7, w_terms=0.3).shape == (2, 0)
