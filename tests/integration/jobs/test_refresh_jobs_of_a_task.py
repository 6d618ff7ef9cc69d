"""A task's scheduled refreshes are listed with its jobs (get_status detail=full, cypher/jobs/task_jobs): the
`task_refresh` jobs the scheduler queues are jobs of the service (no HAS_JOB, keyed by the task), and the task's
job list shows the one queued and the ones that ended before it, and none of another task, even one whose id
starts like its own. They are listed only: the task's job counts and milestones stay those of its own jobs.
Real Neo4j; the jobs are queued by the scheduler's claim and ended by hand (no worker runs)."""

from __future__ import annotations

import pytest

from lyra.bootstrap import Services
from lyra.models.api import GetStatusRequest
from lyra.services.schedule import TASK_REFRESH
from tests.support.helpers import seed_task

pytestmark = pytest.mark.neo4j
TASK = "listed_task"
PREFIXED = "listed_tas"  # its refresh key is a prefix of TASK's


def make_due(services: Services, task_id: str) -> None:
    services.store.driver.execute_query(
        "MATCH (t:Task {id: $t}) SET t.refresh_due_ms = datetime().epochMillis - 1000", t=task_id
    )


def refresh_jobs(services: Services, task_id: str) -> list[tuple[str, str]]:
    status = services.operations.get_status(GetStatusRequest(task_id=task_id, detail="full"))
    assert status.job_list is not None
    return [(job.id, job.state) for job in status.job_list if job.kind == TASK_REFRESH]


def test_a_tasks_scheduled_refresh_jobs_are_listed_with_its_jobs(graph: Services) -> None:
    for task_id in (TASK, PREFIXED):
        seed_task(graph, task_id, [f"a claim of {task_id}"])
        graph.schedule.set(task_id, "2h", 0, 5)
        make_due(graph, task_id)
    claimed = {c["task_id"]: c["job_id"] for c in graph.schedule.claim_due()}
    assert set(claimed) == {TASK, PREFIXED}
    assert refresh_jobs(graph, TASK) == [(claimed[TASK], "queued")]
    assert refresh_jobs(graph, PREFIXED) == [(claimed[PREFIXED], "queued")]
    status = graph.operations.get_status(GetStatusRequest(task_id=TASK, detail="full"))
    assert status.jobs.queued == 0 and not status.milestones.targets_queued  # counted: the task's own jobs only

    # the first refresh ended; the next one is due and queued: both are listed, the older under its set-aside key
    graph.store.driver.execute_query("MATCH (j:Job {id: $id}) SET j.state = 'done'", id=claimed[TASK])
    make_due(graph, TASK)
    (again,) = graph.schedule.claim_due()
    assert again["task_id"] == TASK and again["job_id"] != claimed[TASK]
    assert refresh_jobs(graph, TASK) == [(claimed[TASK], "done"), (again["job_id"], "queued")]
    assert refresh_jobs(graph, PREFIXED) == [(claimed[PREFIXED], "queued")]
