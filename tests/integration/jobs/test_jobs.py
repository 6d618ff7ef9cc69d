"""Background jobs kept in Neo4j: queueing, duplicates, workers, stop, restart recovery, budgets (real Neo4j).

The worker pools here run a small executor written for the test (no models): these tests are about the job
machinery; the pipeline behind a real ``file`` job is exercised in test_servers_e2e.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lyra.bootstrap import Services
from lyra.core.errors import GraphUnavailableError, InvalidInputError, NotFoundError
from lyra.models.api import GetStatusRequest, QueueTargetsRequest, StopTaskRequest, Target
from lyra.services.jobs import ClaimedJob, JobContext, JobOutcome, JobService, WorkerPool, route_jobs
from lyra.services.research import ResearchExecutor

pytestmark = pytest.mark.neo4j
TASK = "jobs_task"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "a.md").write_text("# A\n\nSome text about a topic that is long enough.", encoding="utf-8")
    (tmp_path / "b.md").write_text("# B\n\nMore text about another topic, long enough.", encoding="utf-8")
    return tmp_path


@pytest.fixture
def jobs(graph: Services, folder: Path) -> JobService:
    graph.tasks.create_task(TASK, "Jobs are kept in the graph")
    return JobService(graph.store, graph.task_repo, [folder])


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError("condition not reached in time")


def job_states(services: Services) -> dict[str, str]:
    return {j["value"]: j["state"] for j in services.store.run("jobs/task_jobs", {"task_id": TASK})}


def file_targets(*names: str) -> list[Target]:
    return [Target(kind="file", value=name) for name in names]


@pytest.fixture
def pools() -> Iterator[list[WorkerPool]]:
    started: list[WorkerPool] = []
    yield started
    for pool in started:
        pool.stop(timeout=5)


def test_queue_targets_creates_one_queued_job_per_target_and_skips_duplicates(
    jobs: JobService, graph: Services
) -> None:
    first = jobs.queue(QueueTargetsRequest(task_id=TASK, targets=file_targets("a.md", "b.md", "a.md")))
    assert first.queued == 2 and first.duplicates == 1
    assert first.jobs[2].duplicate and first.jobs[2].job_id == first.jobs[0].job_id
    again = jobs.queue(QueueTargetsRequest(task_id=TASK, targets=[Target(kind="query", value="  Vitamin   D ")]))
    same = jobs.queue(QueueTargetsRequest(task_id=TASK, targets=[Target(kind="query", value="vitamin d")]))
    assert again.queued == 1 and same.duplicates == 1  # the query is compared normalised
    assert sorted(job_states(graph).values()) == ["queued", "queued", "queued"]


def test_a_url_target_is_a_duplicate_when_it_makes_the_same_request(jobs: JobService, graph: Services) -> None:
    page = "http://127.0.0.1:8000/corpus/ghana.html"
    variants = [page, f"{page}#x", "HTTP://127.0.0.1:8000/corpus/ghana.html", f"{page}/", f"{page}/#top"]
    queued = jobs.queue(QueueTargetsRequest(task_id=TASK, targets=[Target(kind="url", value=v) for v in variants]))
    assert [j.duplicate for j in queued.jobs] == [False, True, True, False, True]
    assert sorted(job_states(graph)) == [page, f"{page}/"]  # the fragment dropped, the trailing slash kept


def test_a_bad_target_rejects_the_whole_request_and_writes_nothing(jobs: JobService, graph: Services) -> None:
    targets = [*file_targets("a.md"), Target(kind="url", value="ftp://example.org/x")]
    with pytest.raises(InvalidInputError) as info:
        jobs.queue(QueueTargetsRequest(task_id=TASK, targets=targets))
    assert info.value.field == "targets[1].value"
    assert job_states(graph) == {}


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (Target(kind="file", value="/etc/passwd"), "outside the allowed folders"),
        (Target(kind="file", value="../../etc/passwd"), "no such file"),
        (Target(kind="file", value="missing.md"), "no such file"),
        (Target(kind="doi", value="not-a-doi"), "not a DOI"),
    ],
)
def test_file_targets_are_confined_to_the_allowed_folders(jobs: JobService, target: Target, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        jobs.queue(QueueTargetsRequest(task_id=TASK, targets=[target]))


def test_queueing_for_an_unknown_task_is_not_found(jobs: JobService) -> None:
    with pytest.raises(NotFoundError):
        jobs.queue(QueueTargetsRequest(task_id="no_such_task", targets=file_targets("a.md")))


def test_a_worker_runs_queued_jobs_and_records_results_and_budget(
    jobs: JobService, graph: Services, pools: list[WorkerPool]
) -> None:
    seen: list[str] = []

    def executor(job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        seen.append(job.value)
        return JobOutcome(result={"value": job.value}, pages=3)

    pool = WorkerPool(graph.store, executor, poll_seconds=0.2, heartbeat_seconds=0.5)
    pools.append(pool)
    jobs.on_queued(pool.wake)
    pool.start()
    jobs.queue(QueueTargetsRequest(task_id=TASK, targets=file_targets("a.md", "b.md")))
    wait_until(lambda: set(job_states(graph).values()) == {"done"})
    status = graph.status.status(GetStatusRequest(task_id=TASK, detail="full"))
    assert status.jobs.done == 2 and status.budget.pages_used == 6
    assert status.status == "completed" and status.milestones.jobs_drained
    assert status.job_list is not None and {j.result["value"] for j in status.job_list if j.result} == set(seen)
    assert all(j.attempts == 1 for j in status.job_list)


def test_stop_immediate_cancels_running_and_queued_jobs_and_queueing_again_resumes(
    jobs: JobService, graph: Services, pools: list[WorkerPool]
) -> None:
    started = threading.Event()
    release = threading.Event()

    def executor(job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        started.set()
        while not release.is_set():
            ctx.check()  # the pipeline calls this between units of work
            time.sleep(0.05)
        return JobOutcome(result={})

    pool = WorkerPool(graph.store, executor, poll_seconds=0.2, heartbeat_seconds=0.3)
    pools.append(pool)
    pool.start()
    jobs.queue(QueueTargetsRequest(task_id=TASK, targets=file_targets("a.md", "b.md")))
    assert started.wait(10)
    cancelled, running = jobs.stop(TASK, immediate=True)
    assert (cancelled, running) == (1, 1)
    wait_until(lambda: set(job_states(graph).values()) == {"cancelled"})
    assert graph.status.status(GetStatusRequest(task_id=TASK)).status == "paused"

    release.set()
    resumed = jobs.queue(QueueTargetsRequest(task_id=TASK, targets=file_targets("a.md", "b.md")))
    assert resumed.queued == 2  # cancelled jobs are queued again
    pool.wake()
    wait_until(lambda: set(job_states(graph).values()) == {"done"})


def test_graceful_stop_lets_the_running_job_finish(jobs: JobService, graph: Services, pools: list[WorkerPool]) -> None:
    started, release = threading.Event(), threading.Event()

    def executor(job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        started.set()
        release.wait(10)
        ctx.check()
        return JobOutcome(result={})

    pool = WorkerPool(graph.store, executor, poll_seconds=0.2, heartbeat_seconds=0.3)
    pools.append(pool)
    pool.start()
    jobs.queue(QueueTargetsRequest(task_id=TASK, targets=file_targets("a.md", "b.md")))
    assert started.wait(10)
    graph.operations.stop_task(StopTaskRequest(task_id=TASK, mode="graceful"))
    release.set()
    wait_until(lambda: sorted(job_states(graph).values()) == ["cancelled", "done"])


def test_a_job_left_running_by_a_dead_server_is_resumed_once_and_runs_again(
    jobs: JobService, graph: Services, pools: list[WorkerPool]
) -> None:
    jobs.queue(QueueTargetsRequest(task_id=TASK, targets=file_targets("a.md")))
    # A server takes the job and dies: its heartbeat never comes.
    claimed = graph.store.run("jobs/claim_next_job", {"worker": "worker_dead", "claim": "c1", "max_attempts": 3})
    assert claimed and claimed[0]["won"] and claimed[0]["attempts"] == 1
    runs: list[int] = []

    def executor(job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        runs.append(job.attempts)
        return JobOutcome(result={})

    pool = WorkerPool(graph.store, executor, poll_seconds=0.2, heartbeat_seconds=0.3, stale_seconds=1)
    pools.append(pool)
    pool.start()
    wait_until(lambda: job_states(graph) == {str(Path(jobs.allowed_roots[0]).resolve() / "a.md"): "done"})
    assert runs == [2]


def test_a_job_that_loses_neo4j_is_resumed_not_failed(
    jobs: JobService, graph: Services, pools: list[WorkerPool]
) -> None:
    """A run that loses Neo4j (the driver gave up while Neo4j restarted) records nothing: the job is requeued when
    its heartbeat is stale and runs again. It was recorded as failed for good when Neo4j answered again in time for
    finish_job (test_neo4j_kill.py found it)."""
    jobs.queue(QueueTargetsRequest(task_id=TASK, targets=file_targets("a.md")))
    runs: list[int] = []

    def executor(job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        runs.append(job.attempts)
        if job.attempts == 1:
            raise GraphUnavailableError("Neo4j is not reachable while running cypher/evidence/upsert_pages.cypher")
        return JobOutcome(result={})

    pool = WorkerPool(graph.store, executor, poll_seconds=0.2, heartbeat_seconds=0.3, stale_seconds=1)
    pools.append(pool)
    pool.start()
    wait_until(lambda: set(job_states(graph).values()) == {"done"})
    (job,) = graph.store.run("jobs/task_jobs", {"task_id": TASK})
    assert runs == [1, 2] and job["attempts"] == 2 and job["error"] is None


def test_a_job_interrupted_too_often_fails_with_a_clear_error(jobs: JobService, graph: Services) -> None:
    jobs.queue(QueueTargetsRequest(task_id=TASK, targets=file_targets("a.md")))
    pool = WorkerPool(graph.store, lambda job, ctx: JobOutcome(result={}), stale_seconds=1, max_attempts=2)
    for attempt in range(2):
        assert graph.store.run(
            "jobs/claim_next_job", {"worker": f"dead_{attempt}", "claim": f"c{attempt}", "max_attempts": 2}
        )[0]["won"]
        time.sleep(1.2)
        pool.requeue_stale()
    (job,) = graph.store.run("jobs/task_jobs", {"task_id": TASK})
    assert job["state"] == "failed" and "interrupted 2 times" in job["error"]


def test_query_url_and_doi_targets_fail_as_jobs_with_source_not_available(
    jobs: JobService, graph: Services, pools: list[WorkerPool], folder: Path
) -> None:
    executor = ResearchExecutor(graph.store, lambda: pytest.fail("no ingest for these"), [folder])
    pool = WorkerPool(graph.store, executor, poll_seconds=0.2, heartbeat_seconds=0.3)
    pools.append(pool)
    pool.start()
    targets = [
        Target(kind="query", value="vitamin d falls"),
        Target(kind="url", value="https://example.org/paper"),
        Target(kind="doi", value="https://doi.org/10.1000/XYZ"),
    ]
    queued = jobs.queue(QueueTargetsRequest(task_id=TASK, targets=targets))
    assert queued.jobs[2].value == "10.1000/xyz"
    wait_until(lambda: set(job_states(graph).values()) == {"failed"})
    status = graph.status.status(GetStatusRequest(task_id=TASK))
    assert len(status.errors) == 3 and all("source_not_available" in e for e in status.errors)


def test_a_task_over_its_page_budget_fails_new_jobs_with_budget_exhausted(
    jobs: JobService, graph: Services, folder: Path
) -> None:
    graph.store.run("jobs/set_task_budget", {"task_id": TASK, "max_pages": 2, "max_seconds": None})
    graph.store.run("jobs/enqueue_jobs", {"task_id": TASK, "rows": []})
    jobs.queue(QueueTargetsRequest(task_id=TASK, targets=file_targets("a.md")))
    (job,) = graph.store.run("jobs/claim_next_job", {"worker": "w", "claim": "c", "max_attempts": 3})
    graph.store.run(
        "jobs/finish_job",
        {"id": job["id"], "claim": "c", "state": "done", "error": None, "result": None, "pages": 2, "seconds": 1.0},
    )
    executor = ResearchExecutor(graph.store, lambda: pytest.fail("over budget: nothing may run"), [folder])
    claimed = ClaimedJob(
        id="j", task_id=TASK, kind="file", value=str(folder / "b.md"), options={}, attempts=1, claim="c2"
    )
    from lyra.core.errors import BudgetExhausted

    with pytest.raises(BudgetExhausted, match="page budget"):
        executor(claimed, JobContext(claimed))
    status = graph.status.status(GetStatusRequest(task_id=TASK))
    assert status.budget.pages_remaining == 0 and status.milestones.budget_exhausted


def test_get_status_long_polls_until_a_job_changes_state(
    jobs: JobService, graph: Services, pools: list[WorkerPool]
) -> None:
    release = threading.Event()

    def executor(job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        release.wait(10)
        return JobOutcome(result={})

    pool = WorkerPool(graph.store, executor, poll_seconds=0.2, heartbeat_seconds=0.3)
    pools.append(pool)
    pool.start()
    jobs.queue(QueueTargetsRequest(task_id=TASK, targets=file_targets("a.md")))
    wait_until(lambda: set(job_states(graph).values()) == {"running"})
    timer = threading.Timer(1.0, release.set)
    timer.start()
    start = time.monotonic()
    status = graph.status.status(GetStatusRequest(task_id=TASK, wait=20))
    waited = time.monotonic() - start
    assert 0.8 < waited < 10 and status.jobs.done == 1
    quick = graph.status.status(GetStatusRequest(task_id=TASK, wait=20))  # nothing left to run: no waiting
    assert quick.waited_seconds < 1


def test_a_job_of_the_service_runs_without_a_task_and_shows_its_progress_while_it_runs(
    jobs: JobService, graph: Services, pools: list[WorkerPool]
) -> None:
    halfway = threading.Event()
    go_on = threading.Event()

    def slow(job: ClaimedJob, ctx: JobContext) -> JobOutcome:  # a job kind written for this test
        ctx.report({"stage": "halfway", "steps": 2, "steps_done": 1})
        halfway.set()
        go_on.wait(20)
        return JobOutcome(result={"options": job.options})

    def research(job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        raise AssertionError("the service's job went to the research executor")

    pool = WorkerPool(graph.store, route_jobs(research, {"slow_test": slow}), poll_seconds=0.1, heartbeat_seconds=0.5)
    pools.append(pool)
    jobs.on_queued(pool.wake)
    first = jobs.queue_service_job("slow_test", "test:slow", {"n": 1})
    again = jobs.queue_service_job("slow_test", "test:slow", {"n": 2})
    assert first.queued and not again.queued and again.id == first.id  # one queued or running per key
    queued = jobs.get_job(first.id)
    assert (queued.state, queued.task_id, queued.kind, queued.progress) == ("queued", None, "slow_test", None)
    pool.start()
    assert halfway.wait(20)
    running = jobs.get_job(first.id)
    assert running.state == "running" and running.progress == {"stage": "halfway", "steps": 2, "steps_done": 1}
    assert not jobs.queue_service_job("slow_test", "test:slow", {"n": 3}).queued
    go_on.set()
    wait_until(lambda: jobs.get_job(first.id).state == "done")
    done = jobs.get_job(first.id)
    assert done.result == {"options": {"n": 1}} and done.attempts == 1 and done.finished_at
    later = jobs.queue_service_job("slow_test", "test:slow", {"n": 4})  # the batch ended: a new one is queued
    assert later.queued and later.id != first.id
    assert jobs.get_job(first.id).state == "done"  # the ended job stays readable by its id
    with pytest.raises(NotFoundError):
        jobs.get_job("job_" + "0" * 32)
