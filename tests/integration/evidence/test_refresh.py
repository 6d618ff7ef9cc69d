"""refresh_task against the real Neo4j and the scholarly replay server: a task's
earlier query, url and doi targets are queued again as new jobs under a key of their own per refresh (a done target
runs again; one still queued is left alone; max_targets bounds it), a retraction check runs with it, and the refresh
is a recorded run; the REST door answers the same."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from lyra.bootstrap import Services, build_http_app
from lyra.models.api import QueueTargetsRequest
from lyra.models.refresh import RefreshRequest
from lyra.models.timeline import GetChangesRequest
from lyra.testing.scholarly import ReplayServer
from tests.support.helpers import seed_task
from tests.support.retractions import RETRACTION, lyra, paper_pages, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.neo4j
TASK = "refresh_task"


def jobs(services: Services) -> list[dict[str, Any]]:
    records = services.store.driver.execute_query(
        "MATCH (:Task {id: $t})-[:HAS_JOB]->(j:Job) RETURN j.id AS id, j.kind AS kind, j.value AS value, "
        "j.state AS state, j.key AS key ORDER BY j.created_at, j.id",
        t=TASK,
    ).records
    return [r.data() for r in records]


def finish_all(services: Services) -> None:
    services.store.driver.execute_query("MATCH (j:Job {task_id: $t}) SET j.state = 'done'", t=TASK)


def test_refresh_queues_earlier_targets_again_within_a_budget(lyra: Services, server: ReplayServer) -> None:  # noqa: F811
    services = lyra
    seed_task(services, TASK, ["the treatment lowers blood pressure"])
    paper_pages(services, TASK, ["10.5555/gone"])
    targets = [
        {"kind": "query", "value": "Blood  Pressure trial"},
        {"kind": "doi", "value": "10.5555/keep"},
        {"kind": "url", "value": "https://papers.invalid/review"},
    ]
    services.operations.queue_targets(QueueTargetsRequest.model_validate({"task_id": TASK, "targets": targets}))
    first_jobs = jobs(services)
    assert len(first_jobs) == 3

    # still queued: a refresh leaves them alone
    pending = services.operations.refresh_task(RefreshRequest(task_id=TASK))
    assert pending.queued == 0 and {t.status for t in pending.targets} == {"pending"}
    assert len(jobs(services)) == 3

    # done: a refresh runs them again, as new jobs, within max_targets (oldest first)
    finish_all(services)
    server.set_updates("gone", [RETRACTION])
    result = services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=2))
    assert result.queued == 2
    assert [(t.kind, t.value, t.status) for t in result.targets] == [
        ("query", "blood pressure trial", "queued"),
        ("doi", "10.5555/keep", "queued"),
        ("url", "https://papers.invalid/review", "over_budget"),
    ]
    assert {p.doi: p.state for p in result.retractions.pages} == {"10.5555/gone": "retracted"}
    now = jobs(services)
    assert len(now) == 5 and len({j["key"] for j in now}) == 5
    new = {j["id"]: j for j in now if j["state"] == "queued"}
    assert set(new) == {t.job_id for t in result.targets if t.job_id}
    assert not set(new) & {j["id"] for j in first_jobs}

    # again: the refresh's own jobs are still queued; the target left over is queued now
    again = services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=2))
    assert [t.status for t in again.targets] == ["pending", "pending", "queued"]
    assert again.refresh_id != result.refresh_id and len(jobs(services)) == 6
    assert again.retractions.edges_retracted == 0

    # each refresh is a recorded run, with a retraction check before it
    runs = services.operations.get_changes(GetChangesRequest(task_id=TASK, since="2000-01-01T00:00:00Z")).runs
    kinds = [r.kind for r in runs]
    assert kinds.count("refresh") == 3 and kinds.count("retractions") == 3
    assert {r.cause_id for r in runs if r.kind == "refresh"} >= {result.refresh_id, again.refresh_id}

    # max_targets 0: only the retraction check
    check_only = services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0))
    assert check_only.queued == 0 and len(jobs(services)) == 6


def request(services: Services, method: str, path: str, **kwargs: Any) -> httpx.Response:
    app = build_http_app(services, workers=False, mcp=False)

    async def run() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            return await client.request(method, path, **kwargs)

    return anyio.run(run)


def test_refresh_through_rest(lyra: Services, server: ReplayServer) -> None:  # noqa: F811
    services = lyra
    seed_task(services, TASK, ["the treatment lowers blood pressure"])
    paper_pages(services, TASK, ["10.5555/keep"])
    answer = request(services, "POST", f"/api/v1/tasks/{TASK}/refresh", json={"max_targets": 0})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["task_id"] == TASK and body["queued"] == 0
    assert [p["state"] for p in body["retractions"]["pages"]] == ["none"]
    assert request(services, "POST", f"/api/v1/tasks/{TASK}/refresh").status_code == 200  # no body: defaults
    assert request(services, "POST", "/api/v1/tasks/no_such_task/refresh").status_code == 404
    bad = request(services, "POST", f"/api/v1/tasks/{TASK}/refresh", json={"max_targets": -1})
    assert bad.status_code == 422 and "max_targets" in bad.text
