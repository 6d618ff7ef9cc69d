"""Writing the evidence graph: re-discovery, one stance edge per pair, bad input writes nothing."""

from __future__ import annotations

import pytest

from lyra.bootstrap import Services
from lyra.core.errors import ConflictError, InvalidInputError, NotFoundError
from tests.support.helpers import claim_materials, seed_fragments, seed_task

pytestmark = pytest.mark.neo4j


def counts(services: Services) -> dict[str, int]:
    return services.cleanup.counts().model_dump()


def test_task_claims_carry_the_per_task_label_and_hang_under_the_task(graph: Services) -> None:
    claim_ids = seed_task(graph, "label_task", ["one", "two"])
    records, _, _ = graph.store.driver.execute_query(
        "MATCH (:Task {id: 'label_task'})-[:HAS_CLAIM]->(c:Claim:Task_label_task) "
        "RETURN c.id AS id, c.task_id AS task_id, c.claim_adoption_status AS status",
        database_=graph.store.database,
    )
    assert sorted(r["id"] for r in records) == sorted(claim_ids)
    assert {(r["task_id"], r["status"]) for r in records} == {("label_task", "adopted")}


def test_rediscovered_page_and_fragment_keep_their_ids_while_claims_are_new(graph: Services) -> None:
    first = graph.evidence.upsert_pages([{"url": "https://a.org/1", "doi": "10.1/x"}])
    again = graph.evidence.upsert_pages(
        [{"url": "https://mirror.org/other-url", "doi": "10.1/X"}, {"url": "https://a.org/1"}]
    )
    assert again.ids == [first.ids[0], first.ids[0]]
    assert again.created == 0
    f1 = graph.evidence.upsert_fragments([{"page_id": first.ids[0], "text": "Same  text"}])
    f2 = graph.evidence.upsert_fragments([{"page_id": first.ids[0], "text": "Same text"}])
    assert f1.ids == f2.ids and f2.created == 0
    c1 = seed_task(graph, "task_one", ["the claim"])
    c2 = seed_task(graph, "task_two", ["the claim"])
    assert c1 != c2
    assert counts(graph)["pages"] == 1 and counts(graph)["fragments"] == 1


def test_page_domain_node_is_shared_and_keeps_its_category(graph: Services) -> None:
    graph.evidence.upsert_pages(
        [{"url": "https://nature.com/a", "domain_category": "academic"}, {"url": "https://www.nature.com/b"}]
    )
    records, _, _ = graph.store.driver.execute_query(
        "MATCH (p:Page)-[:IN_DOMAIN]->(d:Domain) RETURN d.name AS name, d.domain_category AS cat, count(p) AS n",
        database_=graph.store.database,
    )
    assert [(r["name"], r["cat"], r["n"]) for r in records] == [("nature.com", "academic", 2)]


def test_same_pair_gets_one_edge_and_rewriting_is_idempotent(graph: Services) -> None:
    (claim,) = seed_task(graph, "pair_task", ["c"])
    (frag,) = seed_fragments(graph, 1)
    first = graph.evidence.create_stance_edges(
        [{"fragment_id": frag, "claim_id": claim, "relation": "SUPPORTS", "nli_confidence": 0.8}]
    )
    second = graph.evidence.create_stance_edges(
        [{"fragment_id": frag, "claim_id": claim, "relation": "REFUTES", "nli_confidence": 0.4}]
    )
    assert first.created == 1 and second.created == 0
    assert second.ids == first.ids
    assert counts(graph)["stance_edges"] == 1
    (c,) = claim_materials(graph, "pair_task")
    assert (c.alpha, c.beta) == pytest.approx((1.8, 1.0))


def test_conflicting_relations_for_one_pair_in_one_request_are_refused(graph: Services) -> None:
    (claim,) = seed_task(graph, "pair_task", ["c"])
    (frag,) = seed_fragments(graph, 1)
    rows = [
        {"fragment_id": frag, "claim_id": claim, "relation": "SUPPORTS", "nli_confidence": 0.8},
        {"fragment_id": frag, "claim_id": claim, "relation": "NEUTRAL", "nli_confidence": 0.8},
    ]
    with pytest.raises(InvalidInputError) as info:
        graph.evidence.create_stance_edges(rows)
    assert info.value.field == "edges[1].relation"
    assert counts(graph)["stance_edges"] == 0


def test_citations_link_pages_once(graph: Services) -> None:
    a, b = graph.evidence.upsert_pages([{"url": "https://a.org"}, {"url": "https://b.org"}]).ids
    row = {"citing_page_id": a, "cited_page_id": b, "citation_source": "openalex"}
    assert graph.evidence.merge_citations([row]).created == 1
    assert graph.evidence.merge_citations([row]).created == 0
    with pytest.raises(InvalidInputError) as info:
        graph.evidence.merge_citations([{**row, "citation_source": "google"}])
    assert info.value.field == "citations[0].citation_source"


# ---------------------------------------------------------------- bad input writes nothing
def test_invalid_task_id_is_refused_and_nothing_written(graph: Services) -> None:
    before = counts(graph)
    with pytest.raises(InvalidInputError) as info:
        graph.tasks.create_task("Bad-Id", "h")
    assert info.value.field == "id"
    assert counts(graph) == before


def test_duplicate_task_is_a_conflict(graph: Services) -> None:
    graph.tasks.create_task("dup_task", "h")
    with pytest.raises(ConflictError, match="dup_task"):
        graph.tasks.create_task("dup_task", "h")


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"nli_confidence": 1.5}, "edges[2].nli_confidence"),
        ({"nli_confidence": -0.1}, "edges[2].nli_confidence"),
        ({"relation": "CONTRADICTS"}, "edges[2].relation"),
        ({"relation": "supports"}, "edges[2].relation"),
    ],
)
def test_bad_edge_in_a_batch_names_the_field_and_writes_nothing(
    graph: Services, bad: dict[str, object], field: str
) -> None:
    (claim,) = seed_task(graph, "bad_edges", ["c"])
    frags = seed_fragments(graph, 3)
    rows = [{"fragment_id": f, "claim_id": claim, "relation": "SUPPORTS", "nli_confidence": 0.5} for f in frags]
    rows[2].update(bad)
    before = counts(graph)
    with pytest.raises(InvalidInputError) as info:
        graph.evidence.create_stance_edges(rows)
    assert info.value.field == field
    assert counts(graph) == before


def test_edge_to_unknown_claim_is_refused_and_nothing_written(graph: Services) -> None:
    (frag,) = seed_fragments(graph, 1)
    (claim,) = seed_task(graph, "known", ["c"])
    before = counts(graph)
    rows = [
        {"fragment_id": frag, "claim_id": claim, "relation": "SUPPORTS", "nli_confidence": 0.5},
        {"fragment_id": frag, "claim_id": "clm_missing", "relation": "SUPPORTS", "nli_confidence": 0.5},
    ]
    with pytest.raises(NotFoundError, match="clm_missing"):
        graph.evidence.create_stance_edges(rows)
    assert counts(graph) == before


def test_materials_of_unknown_task_is_not_found(graph: Services) -> None:
    with pytest.raises(NotFoundError, match="no_such_task"):
        claim_materials(graph, "no_such_task")


def test_parallel_batches_and_concurrent_writers_keep_one_edge_per_pair(graph: Services) -> None:
    """Several batches (written by parallel writers) and two callers writing the same pairs at once: every pair ends
    with exactly one edge, and both callers get its id."""
    from concurrent.futures import ThreadPoolExecutor

    claims = seed_task(graph, "many_pairs", [f"c{i}" for i in range(12)])
    frags = seed_fragments(graph, 100)
    rows = [
        {"fragment_id": f, "claim_id": c, "relation": "SUPPORTS" if i % 2 else "REFUTES", "nli_confidence": 0.5}
        for i, (c, f) in enumerate((c, f) for c in claims for f in frags)
    ]
    assert len(rows) > 2 * graph.evidence.batch_size  # more than one batch per call
    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(graph.evidence.create_stance_edges, [rows, list(reversed(rows))])
    assert first.created + second.created == len(rows)
    assert first.ids == list(reversed(second.ids))
    assert counts(graph)["stance_edges"] == len(rows)
    again = graph.evidence.create_stance_edges(rows)
    assert again.created == 0 and again.ids == first.ids


def test_inputs_of_several_batches_keep_one_node_per_identity(graph: Services) -> None:
    """Inputs larger than a batch: a DOI or URL met in several rows (also in different batches) is one page, a text
    met on several pages is one fragment linked to each of them, the ids returned follow the input, and writing it
    all again creates nothing."""
    size = graph.evidence.batch_size
    pages_in = [
        {
            "url": f"https://host{i % 7}.example.org/p/{i}",
            "doi": f"10.5555/par.{i % 40}" if i % 3 == 0 else None,
            "title": f"page {i}",
        }
        for i in range(3 * size)
    ]
    # a row repeating an earlier URL, one repeating a DOI under another URL, and the URL of a page with a DOI met
    # again without it (different keys in the input, one page: they must be written by the same transaction)
    shared = "https://host1.example.org/shared"
    pages_in = [{"url": shared, "doi": "10.5555/shared"}, *pages_in]
    pages_in += [
        {"url": pages_in[5]["url"]},
        {"url": "https://host0.example.org/other", "doi": "10.5555/par.3"},
        {"url": shared},
    ]
    pages = graph.evidence.upsert_pages(pages_in)
    assert pages.ids[-1] == pages.ids[0]
    by_doi: dict[str, set[str]] = {}
    for row, page_id in zip(pages_in, pages.ids, strict=True):
        if row.get("doi"):
            by_doi.setdefault(row["doi"], set()).add(page_id)
    assert all(len(ids) == 1 for ids in by_doi.values())
    assert pages.ids[-3] == pages.ids[5]
    expected_pages = len({row["doi"] or row["url"] for row in pages_in[: 3 * size + 1]})
    assert pages.created == expected_pages == counts(graph)["pages"]

    distinct = sorted(set(pages.ids))
    fragments_in = [
        {"page_id": distinct[i % len(distinct)], "text": f"parallel text {i % (2 * size)}"} for i in range(3 * size)
    ]
    fragments = graph.evidence.upsert_fragments(fragments_in)
    by_text: dict[str, set[str]] = {}
    for row, fragment_id in zip(fragments_in, fragments.ids, strict=True):
        by_text.setdefault(row["text"], set()).add(fragment_id)
    assert all(len(ids) == 1 for ids in by_text.values())
    assert fragments.created == 2 * size == counts(graph)["fragments"]
    links = graph.store.driver.execute_query(
        "MATCH (f:Fragment)-[:EXTRACTED_FROM]->(p:Page) RETURN f.id AS f, p.id AS p", database_=graph.store.database
    ).records
    assert {(r["f"], r["p"]) for r in links} == {
        (fid, row["page_id"]) for row, fid in zip(fragments_in, fragments.ids, strict=True)
    }
    assert len(links) == len({(fid, row["page_id"]) for row, fid in zip(fragments_in, fragments.ids, strict=True)})

    assert graph.evidence.upsert_pages(pages_in).ids == pages.ids
    again = graph.evidence.upsert_fragments(fragments_in)
    assert again.ids == fragments.ids and again.created == 0


@pytest.mark.parametrize("doi_first", [True, False])
def test_one_input_with_a_url_with_and_without_its_doi_is_one_page(graph: Services, doi_first: bool) -> None:
    with_doi = {"url": "https://journal.example.org/a/1", "doi": "10.5555/one.page", "title": "A title"}
    without = {"url": "https://journal.example.org/a/1", "year": 2021}
    by_doi_only = {"url": "https://mirror.example.org/a/1", "doi": "10.5555/one.page"}
    rows = [with_doi, without, by_doi_only] if doi_first else [without, with_doi, by_doi_only]
    result = graph.evidence.upsert_pages(rows)
    assert len(set(result.ids)) == 1 and result.created == 1
    page = graph.store.driver.execute_query(
        "MATCH (p:Page) RETURN p.url AS url, p.doi AS doi, p.title AS title, p.year AS year",
        database_=graph.store.database,
    ).records
    assert [r.data() for r in page] == [
        {"url": "https://journal.example.org/a/1", "doi": "10.5555/one.page", "title": "A title", "year": 2021}
    ]
