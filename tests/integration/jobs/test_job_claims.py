"""Claiming a job is atomic: however many workers race for the queue, each job is started once per attempt
(real Neo4j; threads with their own driver and separate processes claim through the same named statements).

Before the compare-and-set in cypher/jobs/claim_next_job.cypher, 8 threads claiming 20 jobs started most of
them 2-8 times: the re-check after ``apoc.lock.nodes`` read the state the MATCH had cached before the lock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator

import pytest

from lyra.bootstrap import Services
from lyra.core.ids import new_id
from lyra.graph.store import GraphStore, open_driver
from lyra.models.api import QueueTargetsRequest, Target
from lyra.services.jobs import ClaimedJob, JobContext, JobOutcome, JobService, WorkerPool
from tests.support.helpers import ROOT, SUPPORT_DIR, neo4j_env

pytestmark = pytest.mark.neo4j
TASK = "claims_task"
JOBS = 20
THREADS = 8
PROCESSES = 3
MAX_ATTEMPTS = 3
CLAIMER = SUPPORT_DIR / "job_claimer.py"


@pytest.fixture
def queued(graph: Services) -> list[str]:
    """Twenty queued jobs of one task; returns their ids."""
    graph.tasks.create_task(TASK, "Jobs are claimed once per attempt")
    jobs = JobService(graph.store, graph.task_repo, [])
    targets = [Target(kind="query", value=f"question {i}") for i in range(JOBS)]
    return [j.job_id for j in jobs.queue(QueueTargetsRequest(task_id=TASK, targets=targets)).jobs]


@pytest.fixture
def stores(graph: Services) -> Iterator[Callable[[], GraphStore]]:
    """Builds GraphStores with their own driver (and so their own connection pool), closed after the test."""
    opened: list[GraphStore] = []
    settings = graph.settings
    password = settings.neo4j.neo4j_password.get_secret_value() if settings.neo4j.neo4j_password else ""

    def build() -> GraphStore:
        store = GraphStore(
            open_driver(str(settings.neo4j.neo4j_uri), settings.neo4j.neo4j_username, password),
            graph.store.catalog,
            settings,
        )
        opened.append(store)
        return store

    yield build
    for store in opened:
        store.close()


def claim(store: GraphStore, worker: str) -> tuple[dict[str, object] | None, str]:
    token = new_id("claim")
    rows = store.run("jobs/claim_next_job", {"worker": worker, "claim": token, "max_attempts": MAX_ATTEMPTS})
    return (rows[0] if rows else None), token


def jobs_by_id(graph: Services) -> dict[str, dict[str, object]]:
    return {j["id"]: j for j in graph.store.run("jobs/task_jobs", {"task_id": TASK})}


def test_many_threads_and_processes_racing_for_the_queue_start_each_job_exactly_once(
    graph: Services, queued: list[str], stores: Callable[[], GraphStore]
) -> None:
    starts: Counter[str] = Counter()
    lock = threading.Lock()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
    env |= {**neo4j_env(graph.settings), "PYTHONPATH": str(ROOT)}
    processes = [
        subprocess.Popen(
            [sys.executable, str(CLAIMER), f"process_{i}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(PROCESSES)
    ]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    thread_stores = [stores() for _ in range(THREADS)]
    go = threading.Barrier(THREADS + 1)

    def worker(index: int) -> None:
        go.wait()
        empty = 0
        while empty < 3:
            row, _ = claim(thread_stores[index], f"thread_{index}")
            if row is None:
                empty += 1
            elif row["won"]:
                with lock:
                    starts[str(row["id"])] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    # The processes race each other first (so each is surely in the race, however busy the machine), and the
    # threads join in as soon as every process has had its first answer; all of them then race to the end.
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    first_answers = []
    for process in processes:
        assert process.stdout is not None and process.stdout.readline().strip() == "claiming"
        first_answers.append(json.loads(process.stdout.readline()))
    go.wait()
    for thread in threads:
        thread.join(60)
    by_process: list[Counter[str]] = []
    for process, first in zip(processes, first_answers, strict=True):
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        with process.stdout:  # the buffered reader readline() used above (communicate() would skip its buffer)
            answers = [first] + [json.loads(line) for line in process.stdout.read().splitlines() if line.strip()]
        assert process.wait(60) == 0
        by_process.append(Counter(a["id"] for a in answers if a["won"]))
    for counter in by_process:
        starts.update(counter)

    final = jobs_by_id(graph)
    never = [final[job_id] for job_id in queued if job_id not in starts]
    assert never == [], "every job was started"
    assert set(starts.values()) == {1}, f"jobs started more than once: {dict(starts)}"
    assert sum(by_process, Counter()), "the processes won jobs"
    assert {(j["state"], j["attempts"]) for j in final.values()} == {("running", 1)}


def test_two_worker_pools_of_four_workers_run_every_job_once(
    graph: Services, queued: list[str], stores: Callable[[], GraphStore]
) -> None:
    runs: Counter[str] = Counter()
    lock = threading.Lock()

    def executor(job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        with lock:
            runs[job.id] += 1
        time.sleep(0.05)
        return JobOutcome(result={})

    pools = [WorkerPool(stores(), executor, workers=4, poll_seconds=0.1, heartbeat_seconds=0.3) for _ in range(2)]
    for pool in pools:
        pool.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(j["state"] != "done" for j in jobs_by_id(graph).values()):
            time.sleep(0.2)
    finally:
        for pool in pools:
            pool.stop(timeout=10)
    assert runs == Counter({job_id: 1 for job_id in queued})
    assert {(j["state"], j["attempts"]) for j in jobs_by_id(graph).values()} == {("done", 1)}


def test_claims_racing_with_requeues_and_finishes_never_start_a_job_twice_or_beyond_its_attempts(
    graph: Services, queued: list[str], stores: Callable[[], GraphStore]
) -> None:
    """Workers that claim, finish some jobs and requeue every running job at once (stale_seconds = 0, as if all
    workers had died): each run of a job is one attempt, attempts stop at the limit, a finished job stays done."""
    won: defaultdict[str, list[int]] = defaultdict(list)  # job -> the attempt number of each run that started
    finished_at: dict[str, float] = {}
    claimed_after_finish: list[str] = []
    lock = threading.Lock()
    thread_stores = [stores() for _ in range(THREADS)]
    go = threading.Barrier(THREADS)

    def worker(index: int) -> None:
        store = thread_stores[index]
        go.wait()
        idle = 0
        while idle < 3:
            store.run(
                "jobs/requeue_stale_jobs", {"stale_seconds": 0, "max_attempts": MAX_ATTEMPTS, "token": new_id("rq")}
            )
            asked = time.monotonic()
            row, token = claim(store, f"thread_{index}")
            if row is None:
                idle += 1
                continue
            if not row["won"]:
                continue
            job_id, attempt = str(row["id"]), int(str(row["attempts"]))
            with lock:
                won[job_id].append(attempt)
                if job_id in finished_at and finished_at[job_id] < asked:
                    claimed_after_finish.append(job_id)
            if attempt == 2 and queued.index(job_id) % 2 == 0:  # some second runs end normally; the rest are abandoned
                done = store.run(
                    "jobs/finish_job",
                    {"id": job_id, "claim": token, "state": "done", "error": None, "result": None}
                    | {"pages": 0, "seconds": 0.0},
                )
                if done:
                    with lock:
                        finished_at[job_id] = time.monotonic()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    final = jobs_by_id(graph)
    assert claimed_after_finish == [], "a finished job was started again"
    for job_id in queued:
        runs = sorted(won[job_id])
        assert runs == list(range(1, len(runs) + 1)), f"{job_id}: each attempt started once, got {runs}"
        assert 1 <= len(runs) <= MAX_ATTEMPTS
        assert final[job_id]["attempts"] == len(runs)
        if job_id in finished_at:
            assert final[job_id]["state"] == "done"
        else:
            assert final[job_id]["state"] == "failed" and len(runs) == MAX_ATTEMPTS


def test_a_queued_job_that_used_all_its_attempts_is_failed_instead_of_run(
    graph: Services, queued: list[str], stores: Callable[[], GraphStore]
) -> None:
    graph.store.driver.execute_query(  # test-only shortcut: a job left queued at its limit by an older Lyra
        "MATCH (j:Job) SET j.attempts = $n", n=MAX_ATTEMPTS, database_=graph.store.database
    )
    row, _ = claim(stores(), "w")
    assert row is not None and not row["won"]
    job = jobs_by_id(graph)[str(row["id"])]
    assert job["state"] == "failed" and job["attempts"] == MAX_ATTEMPTS and "used all 3 attempts" in str(job["error"])


def enqueue(graph: Services, *ids: str) -> None:
    """Queue one request of ``query`` jobs with the given ids (chosen so their lexical order is not the queue's)."""
    rows = [{"id": i, "key": f"key_{i}", "kind": "query", "value": i, "options": "{}"} for i in ids]
    graph.store.run("jobs/enqueue_jobs", {"task_id": TASK, "rows": rows})


def test_jobs_are_claimed_in_the_order_they_were_queued_not_in_the_order_of_their_ids(graph: Services) -> None:
    # the targets of one request ran in the (random) order of their ids
    graph.tasks.create_task(TASK, "Jobs run in the order they were queued")
    enqueue(graph, "job_z", "job_y", "job_m")
    enqueue(graph, "job_c", "job_b")
    enqueue(graph, "job_a")
    order = []
    while (row := claim(graph.store, "w")[0]) is not None:
        assert row["won"]
        order.append(row["id"])
    assert order == ["job_z", "job_y", "job_m", "job_c", "job_b", "job_a"]
    assert [j["id"] for j in graph.store.run("jobs/task_jobs", {"task_id": TASK})] == order


def test_a_job_queued_again_goes_to_the_back_and_a_requeued_interrupted_job_keeps_its_place(graph: Services) -> None:
    graph.tasks.create_task(TASK, "Jobs run in the order they were queued")
    enqueue(graph, "job_z", "job_y", "job_x")
    row, _ = claim(graph.store, "w")  # job_z runs; its worker dies
    assert row is not None and row["id"] == "job_z"
    graph.store.run("jobs/stop_task_jobs", {"task_id": TASK, "immediate": False})  # job_y, job_x cancelled
    enqueue(graph, "job_w")
    enqueue(graph, "job_x", "job_y")  # queued again: behind job_w, in this request's order
    graph.store.run("jobs/requeue_stale_jobs", {"stale_seconds": 0, "max_attempts": MAX_ATTEMPTS, "token": "rq"})
    order = []
    while (row := claim(graph.store, "w")[0]) is not None:
        order.append(row["id"])
    assert order == ["job_z", "job_w", "job_x", "job_y"]


def test_several_workers_racing_for_the_queue_each_take_jobs_in_queue_order_and_each_job_once(
    graph: Services, stores: Callable[[], GraphStore]
) -> None:
    graph.tasks.create_task(TASK, "Jobs run in the order they were queued")
    ids = [f"job_{chr(ord('z') - i)}" for i in range(JOBS)]  # job_z, job_y, ...: lexical order reversed
    for start in range(0, JOBS, 5):
        enqueue(graph, *ids[start : start + 5])
    taken: dict[int, list[str]] = defaultdict(list)
    thread_stores = [stores() for _ in range(THREADS)]
    go = threading.Barrier(THREADS)

    def worker(index: int) -> None:
        go.wait()
        misses = 0
        while misses < 3:
            row, _ = claim(thread_stores[index], f"thread_{index}")
            if row is None:
                misses += 1
            elif row["won"]:
                taken[index].append(str(row["id"]))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    everything = [job for jobs in taken.values() for job in jobs]
    assert sorted(everything) == sorted(ids), "each job taken exactly once"
    for jobs in taken.values():  # the queue's head only moves forward: no worker takes a later job before an earlier
        assert jobs == sorted(jobs, key=ids.index)
