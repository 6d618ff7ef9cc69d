"""Scheduled refreshes against the real Neo4j and the scholarly replay server: refresh_task(schedule=...) stores
the period on the task (strict periods, a minimum, 'off' clears), and a due refresh is claimed exactly once however
many schedulers ask at once (two real processes; two Services with their own drivers, each asking from several
threads), queued through the job queue and run by a worker as a recorded refresh run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lyra.bootstrap import Services, build_services
from lyra.core.errors import InvalidInputError, NotFoundError
from lyra.models.refresh import RefreshRequest
from lyra.services.schedule import TASK_REFRESH, refresh_key
from lyra.testing.scholarly import ReplayServer
from tests.support.helpers import ROOT, SUPPORT_DIR, neo4j_env, seed_task
from tests.support.retractions import lyra, paper_pages, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.neo4j
TASKS = ["sched_one", "sched_two", "sched_three"]


def refresh_jobs(services: Services, task_id: str) -> list[dict[str, Any]]:
    records = services.store.driver.execute_query(
        "MATCH (j:Job {kind: $kind}) WHERE j.key STARTS WITH $key "
        "RETURN j.id AS id, j.state AS state, j.options AS options, j.result AS result ORDER BY j.created_at",
        kind=TASK_REFRESH,
        key=refresh_key(task_id),
    ).records
    return [r.data() for r in records]


def make_due(services: Services, task_id: str) -> None:
    """As if the period had passed: the next refresh was due a second ago."""
    services.store.driver.execute_query(
        "MATCH (t:Task {id: $t}) SET t.refresh_due_ms = datetime().epochMillis - 1000", t=task_id
    )


def due_ms(services: Services, task_id: str) -> int:
    records = services.store.driver.execute_query("MATCH (t:Task {id: $t}) RETURN t.refresh_due_ms AS d", t=task_id)
    return int(records.records[0]["d"])


@pytest.fixture
def second(lyra: Services) -> Iterator[Services]:  # noqa: F811
    """Another Services over the same database (its own driver and job service): a second server process."""
    services = build_services(lyra.settings, apply_schema=False)
    try:
        yield services
    finally:
        services.close()


def test_a_schedule_is_set_read_back_refused_when_wrong_and_cleared(lyra: Services, server: ReplayServer) -> None:  # noqa: F811
    ops = lyra.operations
    seed_task(lyra, "sched_one", ["the treatment lowers blood pressure"])
    before = datetime.now(UTC)
    result = ops.refresh_task(RefreshRequest(task_id="sched_one", max_targets=3, max_pages=7, schedule="7d"))
    assert result.schedule is not None
    assert (result.schedule.every, result.schedule.every_seconds) == ("7d", 7 * 86_400)
    assert (result.schedule.max_targets, result.schedule.max_pages) == (3, 7)
    next_at = datetime.fromisoformat(result.schedule.next_run_at.replace("Z", "+00:00"))
    assert before + timedelta(days=7) - timedelta(seconds=5) <= next_at <= datetime.now(UTC) + timedelta(days=7)
    assert result.run_id is not None  # the call refreshed now as well

    # a refresh without schedule keeps it and answers it
    kept = ops.refresh_task(RefreshRequest(task_id="sched_one", max_targets=0, max_pages=0))
    assert kept.schedule is not None and kept.schedule.every == "7d"

    # below the minimum (an hour by default): refused, naming the field, before anything runs
    runs = len(lyra.timeline.runs("sched_one", None))
    with pytest.raises(InvalidInputError) as err:
        ops.refresh_task(RefreshRequest(task_id="sched_one", schedule="30m"))
    assert err.value.field == "schedule" and "minimum" in err.value.message
    assert len(lyra.timeline.runs("sched_one", None)) == runs
    still = lyra.schedule.get("sched_one")
    assert still is not None and still.every == "7d"

    with pytest.raises(NotFoundError):
        ops.refresh_task(RefreshRequest(task_id="sched_none", schedule="7d"))

    cleared = ops.refresh_task(RefreshRequest(task_id="sched_one", max_targets=0, max_pages=0, schedule="off"))
    assert cleared.schedule is None
    # a cleared schedule is never claimed
    assert lyra.schedule.claim_due(now_ms=int(time.time() * 1000) + 400 * 86_400_000) == []


def test_a_due_refresh_is_claimed_exactly_once_by_concurrent_schedulers(
    lyra: Services,  # noqa: F811
    second: Services,
    server: ReplayServer,  # noqa: F811
) -> None:
    for task_id in TASKS:
        seed_task(lyra, task_id, [f"claim of {task_id}"])
        lyra.schedule.set(task_id, "1h", 0, 10)
    not_due = lyra.schedule.claim_due()
    assert not_due == []  # due in an hour

    claimed: list[dict[str, Any]] = []
    lock = threading.Lock()

    def ask(services: Services, start: threading.Barrier, rounds: int) -> None:
        start.wait()
        for _ in range(rounds):
            got = services.schedule.claim_due()
            with lock:
                claimed.extend(got)

    for period in (1, 2):  # two periods pass: each due refresh claimed once per period
        for task_id in TASKS:
            make_due(lyra, task_id)
        asked_at = int(time.time() * 1000)
        start = threading.Barrier(6)
        threads = [
            threading.Thread(target=ask, args=(services, start, 5)) for services in (lyra, second) for _ in range(3)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not any(t.is_alive() for t in threads)
        won = sorted(c["task_id"] for c in claimed)
        assert won == sorted(TASKS * period), won
        for task_id in TASKS:
            # the next one is due a period after the claim, not before
            assert asked_at + 3600_000 - 1000 <= due_ms(lyra, task_id) <= int(time.time() * 1000) + 3600_000
            jobs = refresh_jobs(lyra, task_id)
            assert len(jobs) == period  # one job per period, queued through the job queue
        # finish the jobs, as a worker would, so the next period queues a new one
        lyra.store.driver.execute_query("MATCH (j:Job {kind: $k}) SET j.state = 'done'", k=TASK_REFRESH)


def test_serve_workers_run_a_due_scheduled_refresh_as_a_recorded_run(
    lyra: Services,  # noqa: F811
    server: ReplayServer,  # noqa: F811
) -> None:
    seed_task(lyra, "sched_two", ["the treatment lowers blood pressure"])
    paper_pages(lyra, "sched_two", ["10.5555/keep"])
    lyra.schedule.set("sched_two", "2h", 0, 5)
    make_due(lyra, "sched_two")
    settings = lyra.settings.model_copy(
        update={"jobs": lyra.settings.jobs.model_copy(update={"schedule_poll_seconds": 0.2, "job_poll_seconds": 0.2})}
    )
    services = [build_services(settings, apply_schema=False) for _ in range(2)]
    try:
        with services[0].running_workers(schedule=True), services[1].running_workers(schedule=True):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                jobs = refresh_jobs(lyra, "sched_two")
                if jobs and all(j["state"] in ("done", "failed") for j in jobs):
                    break
                time.sleep(0.2)
            time.sleep(1.0)  # several more scheduler ticks of both processes: nothing more is due
    finally:
        for s in services:
            s.close()
    jobs = refresh_jobs(lyra, "sched_two")
    assert [j["state"] for j in jobs] == ["done"], jobs
    runs = [r for r in lyra.timeline.runs("sched_two", None) if r.kind == "refresh"]
    assert len(runs) == 1
    schedule = lyra.schedule.get("sched_two")
    assert schedule is not None and schedule.last_run_at is not None
    assert due_ms(lyra, "sched_two") > int(time.time() * 1000) + 2 * 3600_000 - 120_000


def test_two_processes_racing_claim_each_due_refresh_once(graph: Services) -> None:
    tasks = [f"sched_proc_{i:02d}" for i in range(40)]
    for task_id in tasks:
        seed_task(graph, task_id, [f"claim of {task_id}"])
        graph.schedule.set(task_id, "1h", 0, 0)
        make_due(graph, task_id)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
    env |= {**neo4j_env(graph.settings), "PYTHONPATH": str(ROOT)}
    processes = [
        subprocess.Popen(
            [sys.executable, str(SUPPORT_DIR / "refresh_claimer.py"), "60", "2"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    won: list[str] = []
    for process in processes:
        out, _ = process.communicate(timeout=120)
        lines = out.strip().splitlines()
        assert lines[-1] == "done" and process.returncode == 0
        won += [json.loads(line)["task_id"] for line in lines[:-1]]
    assert sorted(won) == sorted(tasks)  # each due refresh claimed by exactly one process, once
    now = int(time.time() * 1000)
    assert all(now + 3600_000 - 120_000 < due_ms(graph, t) <= now + 3600_000 for t in tasks)
