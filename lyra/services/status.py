"""get_status: a task's jobs, graph metrics, budget and milestones, with long-polling."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from lyra.graph.store import GraphStore, to_plain
from lyra.graph.tasks import TaskRepository, read_task
from lyra.models.api import (
    AcademicUsage,
    BlockedDomain,
    BlockedPage,
    Budget,
    DomainOverride,
    GetStatusRequest,
    InterventionSummary,
    JobCounts,
    JobInfo,
    Metrics,
    Milestones,
    PairCoverage,
    SkippedDomain,
    TaskStatus,
)

DomainState = Callable[[], tuple[list[BlockedDomain], list[DomainOverride]]]
Interventions = Callable[[str], InterventionSummary]
DangerousPages = Callable[[str], tuple[list[SkippedDomain], list[BlockedPage]]]
POLL_SECONDS = 0.5
MAX_ERRORS = 10


def _no_domain_state() -> tuple[list[BlockedDomain], list[DomainOverride]]:
    return [], []


def _fingerprint(row: dict[str, Any]) -> tuple[Any, ...]:
    keys = (
        "status",
        "queued",
        "running",
        "waiting",
        "done",
        "failed",
        "cancelled",
        "skipped",
        "claims",
        "supports",
        "refutes",
        "neutral",
    )
    return tuple(row[k] for k in keys)


def academic_usage(jobs: list[dict[str, Any]], requests_budget: int | None) -> AcademicUsage | None:
    """The academic part of the task's job results, summed; None when no academic job has finished."""
    results = []
    for job in jobs:
        result = json.loads(job["result"]) if job.get("result") else None
        if isinstance(result, dict) and isinstance(result.get("academic"), dict):
            results.append(result["academic"])
    if not results:
        return None
    api: dict[str, dict[str, int]] = {}
    stages: dict[str, int] = {}
    warnings: list[str] = []
    totals = {"papers_seen": 0, "citations": 0, "pages_read": 0}
    for academic in results:
        for name, counters in (academic.get("api") or {}).items():
            bucket = api.setdefault(name, {})
            for key, value in counters.items():
                if isinstance(value, int):
                    bucket[key] = bucket.get(key, 0) + value
        for key, value in (academic.get("stages") or {}).items():
            if isinstance(value, int):
                stages[key] = stages.get(key, 0) + value
        for key in totals:
            value = academic.get(key)
            totals[key] += value if isinstance(value, int) else 0
        warnings.extend(str(w) for w in academic.get("warnings") or [])
    return AcademicUsage(
        api=api,
        requests_budget=requests_budget,
        stages=stages,
        warnings=warnings[-MAX_ERRORS:],
        **totals,
    )


class StatusService:
    def __init__(
        self,
        store: GraphStore,
        tasks: TaskRepository,
        domain_state: DomainState | None = None,
        requests_budget: int | None = None,
        interventions: Interventions | None = None,
        pair_budget: int | None = None,
        dangerous_pages: DangerousPages | None = None,
    ) -> None:
        self.dangerous_pages = dangerous_pages  # the domains the task skips, the pages blocked for every task
        self.pair_budget = pair_budget  # LYRA_TASK_PAIR_BUDGET (None: pair coverage is not reported)
        self.store = store
        self.tasks = tasks
        self.domain_state = domain_state or _no_domain_state
        self.requests_budget = requests_budget
        self.interventions = interventions  # the task's human-in-the-loop queue (pending walls, paused domains)

    def _row(self, task_id: str) -> dict[str, Any]:
        rows = self.store.run("jobs/task_status", {"task_id": task_id})
        if not rows:
            self.tasks.get(task_id)  # raises NotFoundError with a hint
        return rows[0]

    def status(self, request: GetStatusRequest) -> TaskStatus:
        """Long-polls up to ``wait`` seconds: returns early when anything changes or no job is left to run."""
        start = time.monotonic()
        row = self._row(request.task_id)
        if request.wait > 0:
            before = _fingerprint(row)
            while row["queued"] + row["running"] > 0:
                remaining = request.wait - (time.monotonic() - start)
                if remaining <= 0:
                    break
                time.sleep(min(POLL_SECONDS, remaining))
                row = self._row(request.task_id)
                if _fingerprint(row) != before:
                    break
        jobs = [to_plain(j) for j in self.store.run("jobs/task_jobs", {"task_id": request.task_id})]
        blocked, overrides = self.domain_state()
        status = self._build(row, jobs, blocked, overrides, request.detail == "full", time.monotonic() - start)
        status.academic = academic_usage(jobs, self.requests_budget)
        if self.dangerous_pages is not None:
            status.skipped_domains, status.blocked_pages = self.dangerous_pages(request.task_id)
        self._add_coverage(status)
        if self.interventions is not None:
            summary = self.interventions(request.task_id)
            status.interventions = summary
            status.milestones.needs_person = summary.pending > 0
        return status

    def _add_coverage(self, status: TaskStatus) -> None:
        """The task's pair coverage and pages read (coverage/task_coverage) into its metrics."""
        (row,) = self.store.run("coverage/task_coverage", {"task_id": status.task_id})
        status.metrics.pages_read = row["pages_read"]
        if self.pair_budget is None:
            return
        edges = sum(status.metrics.edges.values())
        status.metrics.pairs = PairCoverage(
            candidates=row["candidates"],
            judged=row["judged"],
            pending=row["candidates"] - row["judged"],
            below_floor=row["below_floor"],
            own_source=row["own_source"],
            unranked_claims=row["claims"] - row["ranked"],
            pair_budget=self.pair_budget,
            pair_budget_left=max(0, self.pair_budget - edges),
        )

    @staticmethod
    def _build(
        row: dict[str, Any],
        jobs: list[dict[str, Any]],
        blocked: list[BlockedDomain],
        overrides: list[DomainOverride],
        full: bool,
        waited: float,
    ) -> TaskStatus:
        counts = JobCounts(
            queued=row["queued"],
            running=row["running"],
            done=row["done"],
            failed=row["failed"],
            cancelled=row["cancelled"],
            waiting=row["waiting"],
            skipped=row["skipped"],
        )
        edges = {"supports": row["supports"], "refutes": row["refutes"], "neutral": row["neutral"]}
        budget = Budget.of(row["max_pages"], row["pages_used"], row["max_seconds"], row["seconds_used"])
        exhausted = budget.exhausted
        active = counts.queued + counts.running
        total_jobs = active + counts.waiting + counts.done + counts.failed + counts.cancelled + counts.skipped
        has_evidence = sum(edges.values()) > 0
        failed = [j for j in jobs if j["state"] == "failed" and j["error"]]
        failed.sort(key=lambda j: j["finished_at"] or "", reverse=True)
        task = read_task({"id": row["task_id"], "hypothesis": row["hypothesis"], "status": row["status"]})
        idle = row["idle_seconds"]
        return TaskStatus(
            task_id=row["task_id"],
            hypothesis=task["hypothesis"],
            status=task["status"],
            stop_requested=row["stop_requested"],
            jobs=counts,
            metrics=Metrics(pages=row["pages"], fragments=row["fragments"], claims=row["claims"], edges=edges),
            budget=budget,
            milestones=Milestones(
                targets_queued=total_jobs > 0,
                first_evidence=has_evidence,
                jobs_drained=total_jobs > 0 and active == 0,
                nli_results_stable=has_evidence and active == 0 and counts.waiting == 0,
                budget_exhausted=exhausted,
            ),
            blocked_domains=blocked,
            domain_overrides=overrides,
            idle_seconds=None if idle is None else max(0, int(idle)),
            waited_seconds=round(waited, 3),
            job_list=[JobInfo(**{**j, "result": json.loads(j["result"]) if j["result"] else None}) for j in jobs]
            if full
            else None,
            errors=[f"{j['kind']} {j['value']}: {j['error']}" for j in failed[:MAX_ERRORS]],
        )
