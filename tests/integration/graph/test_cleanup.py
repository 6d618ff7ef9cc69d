"""Soft and hard (orphans_only) clean-up with two tasks sharing pages and fragments, and the
graph-wide garbage collection of what soft clean-ups leave behind."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client

from lyra.api.app import create_app
from lyra.bootstrap import Services
from lyra.core.errors import ConflictError
from lyra.mcp.server import create_mcp_server
from lyra.models.api import GarbageCounts, QueueTargetsRequest, Target
from lyra.services.jobs import JobService
from tests.support.helpers import claim_materials, seed_task

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


def cypher(services: Services, query: str) -> None:
    services.store.driver.execute_query(query, database_=services.store.database)


def label_counts(services: Services) -> dict[str, int]:
    records, _, _ = services.store.driver.execute_query(
        "MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS n", database_=services.store.database
    )
    return {r["label"]: r["n"] for r in records}


def test_soft_cleanup_removes_only_the_task_scope(graph: Services) -> None:
    built = build_two_tasks(graph)
    before_b = claim_materials(graph, "task_b")
    report = graph.cleanup.cleanup("task_a", "soft")
    assert report.removed.tasks == 1 and report.removed.claims == 1 and report.removed.stance_edges == 3
    assert report.removed.pages == report.removed.fragments == report.removed.citations == report.removed.jobs == 0
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


# ----------------------------------------------------------------------------- jobs
def test_soft_cleanup_removes_the_task_jobs_so_a_task_created_again_queues_its_targets_afresh(
    graph: Services, tmp_path: Path
) -> None:
    (tmp_path / "a.md").write_text("# A\n\nSome text about a topic that is long enough.", encoding="utf-8")
    jobs = JobService(graph.store, graph.task_repo, [tmp_path])
    request = QueueTargetsRequest(task_id="again", targets=[Target(kind="file", value="a.md")])
    graph.tasks.create_task("again", "A task can be created again after a clean-up")
    first = jobs.queue(request)
    cypher(graph, "MATCH (j:Job) SET j.state = 'done'")  # it ran; queueing it again would be a duplicate
    report = graph.cleanup.cleanup("again", "soft")
    assert (report.removed.jobs, report.after.jobs) == (1, 0)
    graph.tasks.create_task("again", "A task can be created again after a clean-up")
    second = jobs.queue(request)
    assert (second.queued, second.duplicates) == (1, 0)
    assert second.jobs[0].job_id != first.jobs[0].job_id and second.jobs[0].state == "queued"


def test_soft_cleanup_leaves_other_tasks_jobs_alone(graph: Services, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\nSome text about a topic that is long enough.", encoding="utf-8")
    jobs = JobService(graph.store, graph.task_repo, [tmp_path])
    for task_id in ("task_a", "task_b"):
        graph.tasks.create_task(task_id, task_id)
        jobs.queue(QueueTargetsRequest(task_id=task_id, targets=[Target(kind="file", value="a.md")]))
    graph.cleanup.cleanup("task_a", "soft")
    assert graph.store.run("jobs/task_jobs", {"task_id": "task_b"})[0]["state"] == "queued"
    assert graph.cleanup.counts().jobs == 1


# ----------------------------------------------------------------------------- garbage collection
def test_gc_after_soft_cleaning_one_task_keeps_everything_the_other_task_reaches(graph: Services) -> None:
    built = build_two_tasks(graph)
    p_shared, _p_a, p_b, _p_cited = built["pages"]
    f_shared, _f_a, f_b, f_shared_page_a = built["fragments"]
    before_b = claim_materials(graph, "task_b")
    graph.cleanup.cleanup("task_a", "soft")
    cypher(graph, "CREATE (:Job {id: 'job_left_behind', key: 'k', task_id: 'gone', state: 'done'})")
    # the daily page counts: last week's is history; yesterday's and today's stay (UTC)
    today = datetime.now(UTC).date()
    for day in (today - timedelta(days=7), today - timedelta(days=1), today):
        graph.store.run(
            "politeness/take_page",
            {"key": f"b.org|{day.isoformat()}", "domain": "b.org", "day": day.isoformat(), "limit": 10},
        )
    report = graph.cleanup.collect_garbage(dry_run=False)
    days = graph.store.driver.execute_query("MATCH (d:DomainDay) RETURN d.day AS day", database_=graph.store.database)
    assert sorted(r["day"] for r in days.records) == [(today - timedelta(days=1)).isoformat(), today.isoformat()]
    # f_a and its page go (with p_a's citation and the page it cited); B's pages, fragments and citation stay,
    # and so does the unjudged fragment on the shared page, whose page B uses.
    assert ids(graph, "Fragment") == {f_shared, f_b, f_shared_page_a}
    assert ids(graph, "Page") == {p_shared, p_b}
    assert ids(graph, "Job") == set()
    expected = GarbageCounts(claims=0, stance_edges=0, fragments=1, citations=1, pages=2, jobs=1, domain_days=1)
    assert report.found == report.removed == expected
    assert claim_materials(graph, "task_b") == before_b
    assert graph.cleanup.counts().citations == 1


def test_gc_after_soft_cleaning_both_tasks_empties_the_evidence_but_keeps_domains_rules_and_audit(
    graph: Services,
) -> None:
    build_two_tasks(graph)
    (claim_b,) = ids(graph, "Claim") - {
        c["claim_id"] for c in graph.store.run("tasks/task_claims", {"task_id": "task_a"})
    }
    cypher(
        graph,
        f"""
        MATCH (c:Claim {{id: '{claim_b}'}}), (d:Domain {{name: 'only-b.org'}})
        CREATE (c)-[:SOURCE_REJECTED {{reason: 'dangerous_pattern'}}]->(d)
        CREATE (:SecurityFinding {{id: 'sf1', task_id: 'task_b'}})-[:FOUND_ON]->(d)
        CREATE (:FeedbackEvent {{id: 'fe1', task_id: 'task_b'}}), (:NLICorrection {{id: 'nc1', task_id: 'task_b'}})
        CREATE (:DomainOverrideRule {{id: 'r1', domain_pattern: 'only-b.org', is_active: true}})
        CREATE (:DomainOverrideEvent {{id: 'e1', rule_id: 'r1'}})
        CREATE (:Calibrator {{version: 1}}), (:CalibrationEvaluation {{id: 'ce1', version: 1}})
        """,
    )
    evidence = ("Task", "Claim", "Fragment", "Unsequenced", "Page")  # Unsequenced: fragments not yet numbered
    kept = {k: v for k, v in label_counts(graph).items() if k not in evidence}
    kept = {k: v for k, v in kept.items() if not k.startswith("Task_")}
    graph.cleanup.cleanup("task_a", "soft")
    cypher(graph, "MATCH (t:Task {id: 'task_b'}) DETACH DELETE t")  # an interrupted soft clean-up of B
    report = graph.cleanup.collect_garbage(dry_run=False)
    assert report.removed == GarbageCounts(claims=1, stance_edges=2, fragments=4, citations=2, pages=4, jobs=0)
    c = graph.cleanup.counts()
    assert (c.tasks, c.claims, c.fragments, c.pages, c.stance_edges, c.citations, c.jobs) == (0, 0, 0, 0, 0, 0, 0)
    assert label_counts(graph) == kept  # Domain, SecurityFinding, rules, events, corrections, calibrators


def test_a_gc_dry_run_counts_what_a_real_run_removes_and_writes_nothing(graph: Services) -> None:
    build_two_tasks(graph)
    graph.cleanup.cleanup("task_a", "soft")
    cypher(graph, "MATCH (t:Task {id: 'task_b'}) DETACH DELETE t")
    before = graph.cleanup.counts()
    dry = graph.cleanup.collect_garbage(dry_run=True)
    assert graph.cleanup.counts() == before
    assert dry.dry_run and dry.removed == GarbageCounts(
        claims=0, stance_edges=0, fragments=0, citations=0, pages=0, jobs=0
    )
    assert dry.found == GarbageCounts(claims=1, stance_edges=2, fragments=4, citations=2, pages=4, jobs=0)
    real = graph.cleanup.collect_garbage(dry_run=False)
    assert real.found == real.removed == dry.found
    assert graph.cleanup.collect_garbage(dry_run=True).found == GarbageCounts(
        claims=0, stance_edges=0, fragments=0, citations=0, pages=0, jobs=0
    )


def test_gc_refuses_to_remove_anything_while_a_job_is_running(graph: Services) -> None:
    build_two_tasks(graph)
    graph.cleanup.cleanup("task_a", "soft")
    cypher(
        graph,
        "MATCH (t:Task {id: 'task_b'}) CREATE (t)-[:HAS_JOB]->(:Job {id: 'j1', task_id: 'task_b', state: 'running'})",
    )
    before = graph.cleanup.counts()
    with pytest.raises(ConflictError, match="1 job"):
        graph.cleanup.collect_garbage(dry_run=False)
    assert graph.cleanup.counts() == before
    assert graph.cleanup.collect_garbage(dry_run=True).found.fragments == 1


def test_a_running_job_of_a_task_that_is_gone_does_not_block_gc_and_is_removed(graph: Services) -> None:
    cypher(graph, "CREATE (:Job {id: 'j1', task_id: 'gone', state: 'running'})")
    assert graph.cleanup.collect_garbage(dry_run=False).removed.jobs == 1


def test_gc_runs_in_batches_larger_than_the_batch_size(graph: Services) -> None:
    # the test settings use cleanup_batch_size=200; 450 orphan claims need three batches
    graph.tasks.create_task("big_task", "big", hypothesis_as_claim=False)
    graph.tasks.add_claims("big_task", [f"claim {i}" for i in range(450)])
    cypher(graph, "MATCH (t:Task {id: 'big_task'}) DETACH DELETE t")
    report = graph.cleanup.collect_garbage(dry_run=False)
    assert report.found.claims == report.removed.claims == 450
    assert graph.cleanup.counts().claims == 0


def test_a_page_a_task_read_keeps_its_unjudged_passages_until_the_task_goes(graph: Services) -> None:
    """A passage below the task's relevance floor has no stance edge, but the task read its page: garbage
    collection keeps both (a claim the task adds later is judged against it), until the task is cleaned up."""
    seed_task(graph, "reader", ["a claim"])
    (page,) = graph.evidence.upsert_pages([{"url": "https://read.example.org/a"}]).ids
    (fragment,) = graph.evidence.upsert_fragments([{"page_id": page, "text": "a passage below the floor"}]).ids
    graph.evidence.record_task_reads("reader", [page], "test")
    assert graph.cleanup.collect_garbage(dry_run=True).found.fragments == 0
    removed = graph.cleanup.collect_garbage(dry_run=False).removed
    assert (removed.fragments, removed.pages) == (0, 0)
    graph.cleanup.cleanup("reader", "soft")
    found = graph.cleanup.collect_garbage(dry_run=True).found
    assert (found.fragments, found.pages) == (1, 1)
    removed = graph.cleanup.collect_garbage(dry_run=False).removed
    assert (removed.fragments, removed.pages) == (1, 1)
    assert not graph.store.run("evidence/fragments_by_ids", {"ids": [fragment]})


def test_hard_cleanup_removes_the_unjudged_passages_of_the_pages_the_task_read(graph: Services) -> None:
    seed_task(graph, "reader", ["a claim"])
    (page,) = graph.evidence.upsert_pages([{"url": "https://read.example.org/b"}]).ids
    graph.evidence.upsert_fragments([{"page_id": page, "text": "another passage below the floor"}])
    graph.evidence.record_task_reads("reader", [page], "test")
    report = graph.cleanup.cleanup("reader", "hard")
    assert (report.removed.fragments, report.removed.pages) == (1, 1)


def test_a_real_gc_needs_a_strict_dry_run_false_and_confirm_true_on_both_doors(graph: Services) -> None:
    """a mistyped flag ran the collection for real. Now a real run needs two real booleans."""
    build_two_tasks(graph)
    graph.cleanup.cleanup("task_a", "soft")
    cypher(graph, "MATCH (t:Task {id: 'task_b'}) DETACH DELETE t")
    before = graph.cleanup.counts()
    app = create_app(graph.operations, graph.settings.api)
    server = create_mcp_server(graph.operations)

    async def rest(body: dict[str, object]) -> tuple[int, dict[str, object]]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            answer = await client.post("/api/v1/maintenance/gc", json=body)
            return answer.status_code, answer.json()

    async def mcp(arguments: dict[str, object]) -> tuple[bool, dict[str, object]]:
        async with Client(server) as client:
            result = await client.call_tool("collect_garbage", arguments)
            text = " ".join(getattr(c, "text", "") for c in result.content)
            return result.is_error, json.loads(text[text.index("{") :]) if result.is_error else {}

    refused = [
        ({"dry_run": False}, "confirm"),
        ({"dry_run": False, "confirm": False}, "confirm"),
        ({"dry_run": False, "confirm": "true"}, "confirm"),
        ({"dry_run": False, "confirm": 1}, "confirm"),
        ({"dry_run": "false", "confirm": True}, "dry_run"),
        ({"dry_run": 0, "confirm": True}, "dry_run"),
        ({"dry_run": None, "confirm": True}, "dry_run"),
    ]
    for body, field in refused:
        code, error = anyio.run(rest, body)
        assert code == 422 and error["field"] == field, (body, error)
        is_error, error = anyio.run(mcp, body)
        assert is_error and (error["error"], error["field"]) == ("invalid_input", field), (body, error)
        assert graph.cleanup.counts() == before, body  # nothing removed
    code, dry = anyio.run(rest, {"dry_run": True, "confirm": True})  # confirm does not turn a dry run into a real one
    assert code == 200 and dry["dry_run"] and graph.cleanup.counts() == before
    code, real = anyio.run(rest, {"dry_run": False, "confirm": True})
    assert code == 200 and real["removed"] == real["found"] == dry["found"] and graph.cleanup.counts() != before
