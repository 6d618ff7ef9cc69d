"""Soft and hard (orphans_only) clean-up with two tasks sharing pages and fragments (ADR-0005)."""

from __future__ import annotations

import pytest

from lyra.bootstrap import Services

from .helpers import claim_materials

pytestmark = pytest.mark.neo4j


def build_two_tasks(services: Services) -> dict[str, list[str]]:
    """Task A and task B share page p_shared and fragment f_shared; each also has its own."""
    pages = services.evidence.upsert_pages(
        [
            {"url": "https://shared.org/p"},
            {"url": "https://only-a.org/p"},
            {"url": "https://only-b.org/p"},
            {"url": "https://cited-by-a.org/p"},
        ]
    ).ids
    p_shared, p_a, p_b, p_cited = pages
    frags = services.evidence.upsert_fragments(
        [
            {"page_id": p_shared, "text": "shared fragment"},
            {"page_id": p_a, "text": "fragment only A uses"},
            {"page_id": p_b, "text": "fragment only B uses"},
            {"page_id": p_shared, "text": "second fragment on the shared page, used by A only"},
        ]
    ).ids
    f_shared, f_a, f_b, f_shared_page_a = frags
    services.tasks.create_task("task_a", "A", hypothesis_as_claim=False)
    services.tasks.create_task("task_b", "B", hypothesis_as_claim=False)
    (ca,) = services.tasks.add_claims("task_a", ["claim of A"])
    (cb,) = services.tasks.add_claims("task_b", ["claim of B"])
    edge = {"relation": "SUPPORTS", "nli_confidence": 0.7}
    services.evidence.create_stance_edges(
        [
            {"fragment_id": f_shared, "claim_id": ca, **edge},
            {"fragment_id": f_a, "claim_id": ca, **edge},
            {"fragment_id": f_shared_page_a, "claim_id": ca, **edge},
            {"fragment_id": f_shared, "claim_id": cb, **edge},
            {"fragment_id": f_b, "claim_id": cb, **edge},
        ]
    )
    services.evidence.merge_citations(
        [
            {"citing_page_id": p_a, "cited_page_id": p_cited, "citation_source": "openalex"},
            {"citing_page_id": p_b, "cited_page_id": p_shared, "citation_source": "openalex"},
        ]
    )
    return {"pages": pages, "fragments": frags, "claims": [ca, cb]}


def ids(services: Services, label: str) -> set[str]:
    records, _, _ = services.store.driver.execute_query(
        f"MATCH (n:{label}) RETURN n.id AS id", database_=services.store.database
    )
    return {r["id"] for r in records}


def test_soft_cleanup_removes_only_the_task_scope(graph: Services) -> None:
    built = build_two_tasks(graph)
    before_b = claim_materials(graph, "task_b")
    report = graph.cleanup.cleanup("task_a", "soft")
    assert report.removed.tasks == 1 and report.removed.claims == 1 and report.removed.stance_edges == 3
    assert report.removed.pages == report.removed.fragments == report.removed.citations == 0
    assert ids(graph, "Task") == {"task_b"}
    assert ids(graph, "Fragment") == set(built["fragments"])
    assert claim_materials(graph, "task_b") == before_b


def test_hard_cleanup_removes_exactly_the_orphans(graph: Services) -> None:
    built = build_two_tasks(graph)
    p_shared, _p_a, p_b, _p_cited = built["pages"]
    f_shared, _f_a, f_b, _f_shared_page_a = built["fragments"]
    before_b = claim_materials(graph, "task_b")
    report = graph.cleanup.cleanup("task_a", "hard")
    # A's own fragments go; the shared fragment stays because B's edge still uses it.
    assert ids(graph, "Fragment") == {f_shared, f_b}
    # p_a lost its fragments and its only citation partner holds none -> gone, and the cited page with it.
    # p_shared keeps a fragment; p_b is B's.
    assert ids(graph, "Page") == {p_shared, p_b}
    assert report.removed.fragments == 2 and report.removed.pages == 2 and report.removed.citations == 1
    assert claim_materials(graph, "task_b") == before_b
    # B's citation to the shared page survives.
    assert graph.cleanup.counts().citations == 1


def test_hard_cleanup_of_both_tasks_empties_the_evidence(graph: Services) -> None:
    build_two_tasks(graph)
    graph.cleanup.cleanup("task_a", "hard")
    graph.cleanup.cleanup("task_b", "hard")
    c = graph.cleanup.counts()
    assert (c.tasks, c.claims, c.fragments, c.pages, c.stance_edges, c.citations) == (0, 0, 0, 0, 0, 0)


def test_hard_cleanup_also_sweeps_claims_left_without_a_task(graph: Services) -> None:
    build_two_tasks(graph)
    graph.store.driver.execute_query(  # simulate an interrupted soft clean-up of task_b
        "MATCH (t:Task {id: 'task_b'}) DETACH DELETE t", database_=graph.store.database
    )
    graph.cleanup.cleanup("task_a", "hard")
    assert ids(graph, "Claim") == set()


def test_cleanup_runs_in_batches_larger_than_the_batch_size(graph: Services) -> None:
    # the test settings use cleanup_batch_size=200; 450 claims need three batches
    graph.tasks.create_task("big_task", "big", hypothesis_as_claim=False)
    graph.tasks.add_claims("big_task", [f"claim {i}" for i in range(450)])
    report = graph.cleanup.cleanup("big_task", "soft")
    assert report.removed.claims == 450
