"""Living evidence: a task's refresh schedule and the loop of `lyra serve` that honours it
(docs/concepts/living-evidence.md "Scheduled refreshes").

``refresh_task(schedule="7d")`` stores the period, the refresh's budgets and the next due time on the task
(cypher/schedule/set_refresh). While `lyra serve` runs its job workers, :class:`RefreshScheduler` asks every
``LYRA_SCHEDULE_POLL_SECONDS`` for the due tasks and claims them with one statement
(cypher/schedule/claim_due_refreshes) that also moves each one's next due time on, so that however many server
processes ask at once a due refresh is claimed by exactly one of them. The claimer queues it through the job queue
as a ``task_refresh`` service job (at most one per task queued or running), which a worker runs with
:meth:`RefreshService.refresh` like a ``refresh_task`` call: a recorded ``refresh`` run.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from lyra.core.errors import InvalidInputError, LyraError, NotFoundError
from lyra.graph.store import GraphStore
from lyra.models.refresh import SCHEDULE_OFF, RefreshRequest, RefreshSchedule, parse_every
from lyra.services.jobs import ClaimedJob, JobContext, JobOutcome, JobService
from lyra.services.refresh import RefreshService

log = logging.getLogger(__name__)

TASK_REFRESH = "task_refresh"  # the job kind of a scheduled refresh
CLAIM_BATCH = 50  # due tasks claimed per statement


def refresh_key(task_id: str) -> str:
    """The job key of a task's scheduled refresh: one queued or running at a time."""
    return f"refresh:{task_id}"


def _schedule(row: dict[str, Any]) -> RefreshSchedule | None:
    if row.get("every") is None:
        return None
    return RefreshSchedule.model_validate(
        {k: row.get(k) for k in ("every", "every_seconds", "max_targets", "max_pages", "next_run_at", "last_run_at")}
    )


class ScheduleService:
    def __init__(self, store: GraphStore, jobs: JobService, min_seconds: int) -> None:
        self.store = store
        self.jobs = jobs
        self.min_seconds = min_seconds

    def check(self, schedule: str) -> int | None:
        """The period's seconds (None: ``off``); raises InvalidInputError on the field ``schedule`` for a period that
        is not one, or is shorter than the minimum or longer than the maximum."""
        if schedule == SCHEDULE_OFF:
            return None
        try:
            every_seconds = parse_every(schedule)
        except ValueError as exc:
            raise InvalidInputError("schedule", str(exc).removeprefix("schedule: ")) from None
        if every_seconds < self.min_seconds:
            raise InvalidInputError(
                "schedule",
                f"{schedule} is shorter than the minimum, {self.min_seconds} seconds",
                hint="LYRA_SCHEDULE_MIN_SECONDS sets the minimum (default 3600, one hour)",
            )
        return every_seconds

    def set(self, task_id: str, schedule: str, max_targets: int, max_pages: int) -> RefreshSchedule | None:
        """Set (``7d``, ``12h`` ...) or clear (``off``) a task's refresh schedule; the next refresh is due one period
        from now. Returns the schedule (None: cleared)."""
        every_seconds = self.check(schedule)
        rows = self.store.run(
            "schedule/set_refresh",
            {
                "task_id": task_id,
                "every": None if every_seconds is None else schedule,
                "every_seconds": every_seconds,
                "max_targets": max_targets,
                "max_pages": max_pages,
            },
        )
        if not rows:
            raise NotFoundError(f"no task {task_id}", hint="list_tasks shows the tasks")
        log.info("task %s: refresh schedule %s", task_id, schedule)
        return _schedule(rows[0])

    def get(self, task_id: str) -> RefreshSchedule | None:
        rows = self.store.run("schedule/task_schedule", {"task_id": task_id})
        if not rows:
            raise NotFoundError(f"no task {task_id}", hint="list_tasks shows the tasks")
        return _schedule(rows[0])

    def claim_due(self, now_ms: int | None = None, limit: int = CLAIM_BATCH) -> list[dict[str, Any]]:
        """Claim the due scheduled refreshes (moving each one's next due time on) and queue each as a job. Returns
        the claimed ones: task_id and the job (id, queued: false when one was still queued or running)."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        token = secrets.randbelow(2**52) + 1
        rows = self.store.run("schedule/claim_due_refreshes", {"now_ms": now, "token": token, "limit": limit})
        claimed: list[dict[str, Any]] = []
        for row in rows:
            if not row["won"]:
                continue
            options = {
                "task_id": row["task_id"],
                "max_targets": row["max_targets"] if row["max_targets"] is not None else 20,
                "max_pages": row["max_pages"] if row["max_pages"] is not None else 200,
            }
            job = self.jobs.queue_service_job(TASK_REFRESH, refresh_key(row["task_id"]), options)
            log.info(
                "task %s: scheduled refresh (every %s) %s as job %s",
                row["task_id"],
                row["every"],
                "queued" if job.queued else "still pending",
                job.id,
            )
            claimed.append({"task_id": row["task_id"], "job_id": job.id, "queued": job.queued})
        return claimed


class RefreshExecutor:
    """Runs ``task_refresh`` jobs (give it to the worker pool through ``route_jobs``)."""

    def __init__(self, refresh: Callable[[], RefreshService]) -> None:
        self._refresh = refresh

    def __call__(self, job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        request = RefreshRequest.model_validate(job.options)
        ctx.report({"stage": "refreshing", "task_id": request.task_id})
        try:
            out = self._refresh().refresh(request)
        except NotFoundError:  # the task was deleted since it was scheduled
            return JobOutcome(result={"task_id": request.task_id, "skipped": "the task no longer exists"})
        return JobOutcome(
            result={
                "task_id": out.task_id,
                "refresh_id": out.refresh_id,
                "run_id": out.run_id,
                "queued": out.queued,
                "edges_retracted": out.retractions.edges_retracted,
            }
        )


class RefreshScheduler:
    """A thread of `lyra serve` that queues due scheduled refreshes every ``poll_seconds``."""

    def __init__(self, schedule: ScheduleService, poll_seconds: float) -> None:
        self.schedule = schedule
        self.poll_seconds = poll_seconds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="lyra-scheduler", daemon=True)
        self._thread.start()
        log.info("refresh scheduler started (every %gs)", self.poll_seconds)

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def tick(self) -> int:
        """One look for due refreshes; how many this process claimed."""
        try:
            return len(self.schedule.claim_due())
        except LyraError as exc:
            log.warning("refresh scheduler: could not claim due refreshes: %s", exc.message)
            return 0

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.tick()
            self._stop.wait(self.poll_seconds)
