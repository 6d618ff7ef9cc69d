"""Runs, claim snapshots, get_changes and claim timelines against the real Neo4j.

A task is judged in runs: the first run snapshots every claim; a second run adds evidence to one claim, which
get_changes reports with its cause (the new edge and its page), the move and the threshold it crossed, while the
untouched claim stays out of the list; a person's correction is a run of its own; a background job's end records a
run through the worker pool's hook; retention keeps a claim's first and newest snapshots; the timeline lists every
event of one claim; the task's clean-up removes runs and snapshots; bad input gets specific errors."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from lyra.bootstrap import Services
from lyra.core.errors import InvalidInputError, NotFoundError
from lyra.models.api import QueueTargetsRequest
from lyra.models.timeline import GetChangesRequest, GetClaimTimelineRequest
from lyra.models.trust import FeedbackRequest
from lyra.services.jobs import ClaimedJob, JobContext, JobOutcome
from lyra.services.timeline import TimelineService
from tests.support.helpers import seed_task

pytestmark = pytest.mark.neo4j
TASK = "living_task"


def pages_and_fragments(services: Services, n: int, prefix: str) -> list[str]:
    pages = services.evidence.upsert_pages(
        [{"url": f"https://living.invalid/{prefix}/{i}", "title": f"{prefix} study {i}", "year": 2020 + i,
          "domain_category": "academic"} for i in range(n)]
    ).ids  # fmt: skip
    services.evidence.record_task_reads(TASK, pages, "living test")
    return services.evidence.upsert_fragments(
        [{"page_id": pages[i], "text": f"{prefix} passage number {i} about the outcome"} for i in range(n)]
    ).ids


def edges(services: Services, claim: str, fragments: list[str], relation: str, confidence: float) -> list[str]:
    rows = [
        {"fragment_id": f, "claim_id": claim, "relation": relation, "nli_confidence": confidence} for f in fragments
    ]
    return services.evidence.create_stance_edges(rows).ids


def changes(services: Services, **fields: object) -> object:
    return services.operations.get_changes(GetChangesRequest.model_validate({"task_id": TASK, **fields}))


def test_a_run_that_adds_evidence_is_reported_with_its_cause(graph: Services) -> None:
    services = graph
    moved, still = seed_task(services, TASK, ["the outcome improves", "the outcome is unrelated"])
    first = pages_and_fragments(services, 2, "first")
    edges(services, moved, first[:1], "REFUTES", 0.6)
    edges(services, still, first[1:], "SUPPORTS", 0.7)
    timeline = services.operations.timeline
    run1, moved1 = timeline.record_run(TASK, "ingest")
    assert moved1 == 2  # every claim gets its first snapshot
    assert timeline.record_run(TASK, "ingest")[1] == 0  # nothing moved: no new snapshot

    started = datetime.now(UTC)  # a run starts before it writes
    later = pages_and_fragments(services, 3, "later")
    added = edges(services, moved, later, "SUPPORTS", 0.9)
    run3, moved3 = timeline.record_run(TASK, "research", "job_test", started)
    assert moved3 == 1

    report = changes(services)  # default: the latest run
    assert [r.run_id for r in report.runs] == [run3]
    (claim,) = report.claims
    assert claim.claim_id == moved and report.unchanged == 1
    assert claim.before is not None and claim.before.refutes == 1 and claim.before.supports == 0
    assert claim.now.supports == 3 and claim.confidence_change > 0
    assert claim.crossed == ["confidence above 0.5"]
    assert {c.edge_id for c in claim.causes} == set(added)
    assert all(c.kind == "new_evidence" and c.relation == "supports" for c in claim.causes)
    assert {c.page.url for c in claim.causes if c.page} == {f"https://living.invalid/later/{i}" for i in range(3)}
    assert all(c.page.title.untrusted for c in claim.causes if c.page and c.page.title)

    since_first = changes(services, since_run=run1, include_unchanged=True)
    assert {c.claim_id for c in since_first.claims} == {moved, still}
    assert len(since_first.runs) == 3


def test_a_correction_is_a_run_and_shows_in_the_timeline(graph: Services) -> None:
    services = graph
    (claim,) = seed_task(services, TASK, ["the outcome improves"])
    fragments = pages_and_fragments(services, 2, "corr")
    ids = edges(services, claim, fragments, "SUPPORTS", 0.8)
    services.operations.timeline.record_run(TASK, "ingest")
    services.operations.feedback(
        FeedbackRequest(task_id=TASK, action="edge_correct", args={"edge_id": ids[0], "correct_relation": "refutes"})
    )
    report = changes(services)
    assert report.runs[0].kind == "feedback" and report.runs[0].claims_moved == 1
    (moved,) = report.claims
    assert moved.before is not None and moved.before.supports == 2 and moved.now.refutes == 1

    timeline = services.operations.get_claim_timeline(GetClaimTimelineRequest(task_id=TASK, claim_id=claim))
    kinds = [e.kind for e in timeline.events]
    assert kinds.count("snapshot") == 2 and kinds.count("edge_added") == 2
    assert timeline.events[0].kind == "snapshot" and timeline.events[0].detail["run_kind"] == "feedback"
    assert timeline.total == len(timeline.events) and not timeline.truncated
    with pytest.raises(NotFoundError):
        services.operations.get_claim_timeline(GetClaimTimelineRequest(task_id=TASK, claim_id="clm_nope"))


def test_retention_keeps_the_first_and_the_newest_snapshots(graph: Services) -> None:
    services = graph
    (claim,) = seed_task(services, TASK, ["the outcome improves"])
    timeline = TimelineService(services.store, services.task_repo, services.materials, snapshots_per_claim=3,
                               runs_per_task=4)  # fmt: skip
    for i in range(5):
        edges(services, claim, pages_and_fragments(services, 1, f"ret{i}"), "SUPPORTS", 0.5)
        timeline.record_run(TASK, "ingest")
    rows = services.store.run("timeline/claim_timeline", {"task_id": TASK, "claim_ids": [claim], "limit": 100})
    snapshots = [e["detail"] for e in rows[0]["events"] if e["kind"] == "snapshot"]
    assert [s["supports"] for s in snapshots] == [5, 4, 1]  # newest first: the newest two and the first
    assert len(timeline.runs(TASK, None)) == 4


def test_a_finished_job_records_a_run(graph: Services) -> None:
    services = graph
    (claim,) = seed_task(services, TASK, ["the outcome improves"])
    fragments = pages_and_fragments(services, 1, "job")
    services.jobs.queue(QueueTargetsRequest.model_validate(
        {"task_id": TASK, "targets": [{"kind": "url", "value": "https://living.invalid/job/0"}]}
    ))  # fmt: skip

    def executor(job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        edges(services, claim, fragments, "SUPPORTS", 0.75)
        return JobOutcome(result={"ok": True}, pages=1)

    pool = services.worker_pool()
    pool.executor = executor
    pool.poll_seconds = 0.1
    pool.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not services.operations.timeline.runs(TASK, None):
            time.sleep(0.2)
    finally:
        pool.stop()
    (run,) = services.operations.timeline.runs(TASK, None)
    assert run.kind == "ingest" and run.cause_id is not None and run.cause_id.startswith("job_")
    assert run.claims_moved == 1 and run.started_at <= run.finished_at


def test_cleanup_removes_runs_and_snapshots(graph: Services) -> None:
    services = graph
    (claim,) = seed_task(services, TASK, ["the outcome improves"])
    edges(services, claim, pages_and_fragments(services, 1, "clean"), "SUPPORTS", 0.6)
    services.operations.timeline.record_run(TASK, "ingest")
    services.cleanup.cleanup(TASK, "soft")
    left = services.store.run("timeline/task_runs", {"task_id": TASK, "since": None, "limit": 10})
    assert left == []
    count = services.store.driver.execute_query(
        "MATCH (s:ClaimSnapshot {task_id: $t}) RETURN count(s) AS n", t=TASK
    ).records[0]["n"]
    assert count == 0


def test_bad_input_is_refused_clearly(graph: Services) -> None:
    services = graph
    seed_task(services, TASK, ["the outcome improves"])
    with pytest.raises(NotFoundError, match="no run"):
        changes(services, since_run="run_" + "0" * 32)
    with pytest.raises(InvalidInputError, match="not both"):
        changes(services, since_run="run_" + "0" * 32, since="2026-01-01T00:00:00Z")
    with pytest.raises(ValidationError, match="time zone"):
        GetChangesRequest.model_validate({"task_id": TASK, "since": "2026-01-01T00:00:00"})
    with pytest.raises(ValidationError, match="since_run"):
        GetChangesRequest.model_validate({"task_id": TASK, "since_run": "latest"})
    with pytest.raises(NotFoundError):
        services.operations.get_changes(GetChangesRequest(task_id="no_such_task"))
    # a time before everything: every claim is new evidence-wise, nothing crashes
    report = changes(services, since="2000-01-01T00:00:00Z", include_unchanged=True)
    assert len(report.claims) == 1
