"""Exploring the graph: named views, guarded ad-hoc Cypher, similarity search (real Neo4j)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lyra.bootstrap import Services
from lyra.core.errors import InvalidInputError, NotFoundError
from lyra.services.graph_import import load_graph_file

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[3]
TASK = "example_vitamin_d"


@pytest.fixture
def example(graph: Services) -> Services:
    load_graph_file(ROOT / "config/examples/example_graph.json", graph.tasks, graph.evidence)
    return graph


def test_the_five_views_are_listed_with_their_parameters(example: Services) -> None:
    views = {v.name: v for v in example.explore.list_views()}
    assert set(views) >= {
        "claim_evidence_summary",
        "contradictions",
        "reference_candidates",
        "domain_statistics",
        "evidence_timeline",
    }
    assert all(v.parameters == ["task_id"] and v.description for v in views.values())


def test_contradictions_view_shows_both_sides_with_domain_categories(example: Services) -> None:
    rows = example.explore.query_view("contradictions", {"task_id": TASK}).rows
    (row,) = rows  # only the hypothesis has both SUPPORTS and REFUTES in the example graph
    assert row["claim"].startswith("Vitamin D supplementation reduces")
    assert sorted(row["supporting_categories"]) == ["academic", "government"]
    assert sorted(row["refuting_categories"]) == ["academic", "academic", "academic"]


def test_summary_statistics_and_timeline_views(example: Services) -> None:
    summary = {r["claim"][:20]: r for r in example.explore.query_view("claim_evidence_summary", {"task_id": TASK}).rows}
    hypothesis = summary["Vitamin D supplement"]
    assert (hypothesis["supports"], hypothesis["refutes"], hypothesis["neutral"]) == (2, 3, 2)
    assert hypothesis["support_weight"] == pytest.approx(0.71 + 0.58)
    domains = {r["domain"]: r for r in example.explore.query_view("domain_statistics", {"task_id": TASK}).rows}
    assert domains["journals.example.org"]["domain_category"] == "academic"
    assert domains["health.example.gov"]["supports"] == 2
    timeline = example.explore.query_view("evidence_timeline", {"task_id": TASK}).rows
    years = {r["year"] for r in timeline}
    assert {1992, 2018, 2022} <= years


def test_reference_candidates_are_cited_pages_without_fragments(example: Services) -> None:
    records, _, _ = example.store.driver.execute_query(
        "MATCH (p:Page {doi: '10.5555/lyra.example.002'}) RETURN p.id AS id", database_=example.store.database
    )
    (unfetched,) = example.evidence.upsert_pages(
        [{"url": "https://journals.example.org/not-fetched", "year": 2001}]
    ).ids
    example.evidence.merge_citations(
        [{"citing_page_id": records[0]["id"], "cited_page_id": unfetched, "citation_source": "openalex"}]
    )
    rows = example.explore.query_view("reference_candidates", {"task_id": TASK}).rows
    assert [r["page_id"] for r in rows] == [unfetched]
    assert rows[0]["citation_sources"] == ["openalex"]


@pytest.mark.parametrize(
    ("name", "params", "error", "field"),
    [
        ("nope", {"task_id": TASK}, NotFoundError, None),
        ("contradictions", {}, InvalidInputError, "params.task_id"),
        ("contradictions", {"task_id": TASK, "extra": 1}, InvalidInputError, "params.extra"),
        ("contradictions", {"task_id": "Bad Id"}, InvalidInputError, "params.task_id"),
    ],
)
def test_view_errors_name_the_problem(
    example: Services, name: str, params: dict[str, object], error: type[Exception], field: str | None
) -> None:
    with pytest.raises(error) as info:
        example.explore.query_view(name, params)
    if field:
        assert info.value.field == field  # type: ignore[attr-defined]


def test_ad_hoc_read_query_runs_with_params_and_row_limit(example: Services) -> None:
    result = example.explore.query_graph("MATCH (p:Page) WHERE p.year >= $y RETURN p.year AS year", {"y": 2000}, 2)
    assert result.row_count == 2 and result.truncated
    assert all(r["year"] >= 2000 for r in result.rows)


@pytest.mark.parametrize(
    "cypher",
    [
        "CREATE (n:Sneaky) RETURN n",
        "MATCH (c:Claim) SET c.text = 'changed'",
        "MATCH (n) DETACH DELETE n",
        "MERGE (d:Domain {name: 'x.org'})",
        "CREATE INDEX sneaky IF NOT EXISTS FOR (n:Sneaky) ON (n.x)",
        "MATCH (n) WITH n LIMIT 1 CALL { CREATE (:Sneaky) } RETURN 1",
    ],
)
def test_ad_hoc_writes_are_refused_and_nothing_changes(example: Services, cypher: str) -> None:
    before = example.cleanup.counts()
    with pytest.raises(InvalidInputError) as info:
        example.explore.query_graph(cypher)
    assert info.value.field == "cypher"
    assert "read-only" in info.value.reason
    assert example.cleanup.counts() == before


def test_ad_hoc_syntax_error_gets_a_hint(example: Services) -> None:
    with pytest.raises(InvalidInputError) as info:
        example.explore.query_graph("MATCH (n RETURN n")
    assert info.value.field == "cypher" and info.value.hint


@pytest.mark.models
def test_vector_search_finds_similar_fragments_within_a_task(example: Services, tmp_path: Path) -> None:
    svc = example
    # The example graph's fragments carry no embeddings; index them the way the pipeline would.
    records, _, _ = svc.store.driver.execute_query(
        "MATCH (f:Fragment) RETURN f.id AS id, f.text AS text", database_=svc.store.database
    )
    from lyra.ml.vector_index import FragmentIndex

    embedder = svc.models.embedder
    vectors = embedder.embed([r["text"] for r in records])
    index = FragmentIndex(embedder.dimension, tmp_path / "idx")
    index.add([r["id"] for r in records], vectors)
    from lyra.services.explore import ExploreService

    explore = ExploreService(svc.store, embedder=lambda: embedder, index=lambda: index)
    hits = explore.vector_search("high-dose cholecalciferol once a year caused more falls", TASK, k=2)
    snippet = hits[0].snippet
    assert snippet.untrusted and (snippet.text or "").startswith("Women who received a single annual oral dose")
    assert hits[0].score > 0.5 and hits[0].url
    assert explore.vector_search("anything", "no_such_task", k=2) == []
    with pytest.raises(InvalidInputError):
        explore.vector_search("", TASK)
