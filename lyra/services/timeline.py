"""Living evidence: runs, claim snapshots, what changed since a run or a moment, and a claim's timeline.

Every run that can change a task's evidence (an ingest or research job, a feedback action, a batch of judgments, a
retraction check) ends with :meth:`TimelineService.record_run`: a ``(:Run)`` node and, for each claim whose scores
moved, a ``(:ClaimSnapshot)`` of where it stands (cypher/timeline/record_run). Snapshots are the memory of where a
claim stood; the causes of a move are read from what the graph already keeps — edges' ``created_at``, the
``(:Judgment)`` history, pages' ``retracted_at`` — so nothing is recorded twice. Confidence always comes from
materials/claim_scores through :meth:`MaterialsService.scores`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from lyra.core.errors import InvalidInputError, NotFoundError
from lyra.core.ids import new_id
from lyra.graph.store import GraphStore, Row
from lyra.graph.tasks import TaskRepository
from lyra.models.confidence import Posterior, beta_stats
from lyra.models.timeline import (
    Cause,
    ChangePage,
    Changes,
    ClaimMove,
    ClaimTimeline,
    GetChangesRequest,
    GetClaimTimelineRequest,
    RunInfo,
    RunKind,
    RunRecorded,
    RunsAfter,
    ScorePoint,
    TimelineEvent,
)
from lyra.services.materials import MaterialsService
from lyra.sources.untrusted import source_text

log = logging.getLogger(__name__)

SNAPSHOTS_PER_CLAIM = 50  # a claim keeps its first snapshot and its newest 49
RUNS_PER_TASK = 500
TITLE_CHARS = 300


def _prior() -> ScorePoint:
    stats = beta_stats(Posterior(1.0, 1.0))
    return ScorePoint(
        confidence=stats.confidence,
        uncertainty=stats.uncertainty,
        controversy=stats.controversy,
        alpha=1.0,
        beta=1.0,
        supports=0,
        refutes=0,
        neutrals=0,
    )


def _point(row: dict[str, Any], at: str | None = None) -> ScorePoint:
    return ScorePoint(
        confidence=row["confidence"],
        uncertainty=row["uncertainty"],
        controversy=row["controversy"],
        alpha=row["alpha"],
        beta=row["beta"],
        supports=row["supports"],
        refutes=row["refutes"],
        neutrals=row["neutrals"],
        at=at,
    )


def _page(value: dict[str, Any] | None, reveal: bool = False) -> ChangePage | None:
    if not value:
        return None
    title = source_text(value.get("title"), TITLE_CHARS, reveal=reveal)
    return ChangePage.model_validate(
        {"source_id": value["id"], "url": value.get("url"), "doi": value.get("doi"), "title": title}
    )


PRIOR = _prior()  # where a claim without evidence stands: Beta(1, 1)


def crossings(before: ScorePoint | None, now: ScorePoint, confidence_at: float, uncertainty_at: float) -> list[str]:
    """The thresholds a claim crossed between two points (a new claim starts from the Beta(1,1) prior)."""
    start_conf = (before or PRIOR).confidence
    start_unc = (before or PRIOR).uncertainty
    crossed = []
    if start_conf <= confidence_at < now.confidence:
        crossed.append(f"confidence above {confidence_at:g}")
    elif now.confidence < confidence_at <= start_conf and now.confidence != start_conf:
        crossed.append(f"confidence below {confidence_at:g}")
    if now.uncertainty < uncertainty_at <= start_unc:
        crossed.append(f"uncertainty below {uncertainty_at:g}")
    return crossed


def judgment_cause(row: dict[str, Any]) -> Cause:
    """A (:Judgment) record as a cause: a person's correction, an assistant's verdict, or another judge's change."""
    judge = str(row.get("judge") or "")
    rank = row.get("judge_rank")
    if judge.startswith("human:") or rank == 2:
        kind = "correction"
    elif judge.startswith("assistant:") or rank == 1:
        kind = "assistant_judgment"
    else:
        kind = "judge_change"
    rationale = row.get("rationale")
    return Cause.model_validate(
        {
            "kind": kind,
            "at": row["at"],
            "edge_id": row.get("edge_id"),
            "relation": _lower(row.get("relation")),
            "previous_relation": _lower(row.get("previous_relation")),
            "judge": judge or None,
            "previous_judge": row.get("previous_judge"),
            "weight": row.get("weight", row.get("confidence")),
            "rationale": source_text(rationale, 500) if isinstance(rationale, str) and rationale else None,
        }
    )


def _lower(value: object) -> str | None:
    return value.lower() if isinstance(value, str) else None


class TimelineService:
    def __init__(
        self,
        store: GraphStore,
        tasks: TaskRepository,
        materials: MaterialsService,
        *,
        snapshots_per_claim: int = SNAPSHOTS_PER_CLAIM,
        runs_per_task: int = RUNS_PER_TASK,
    ) -> None:
        self.store = store
        self.tasks = tasks
        self.materials = materials
        self.snapshots_per_claim = snapshots_per_claim
        self.runs_per_task = runs_per_task
        self._listeners: dict[object, Callable[[RunRecorded], None]] = {}
        self._listeners_lock = threading.Lock()

    def listen(self, listener: Callable[[RunRecorded], None]) -> Callable[[], None]:
        """Call ``listener`` after every run of this process that moved claims (from the thread that recorded it; it
        must not block). Returns the call that stops it. The task's webhook listens here
        (docs/concepts/living-evidence.md: a task's webhook); the MCP notifications, which must also hear of other
        processes' runs, poll the numbered runs instead (:meth:`runs_after`)."""
        token = object()
        with self._listeners_lock:
            self._listeners[token] = listener

        def stop() -> None:
            with self._listeners_lock:
                self._listeners.pop(token, None)

        return stop

    def _announce(self, run: RunRecorded) -> None:
        with self._listeners_lock:
            listeners = list(self._listeners.values())
        for listener in listeners:
            try:
                listener(run)
            except Exception:  # a listener's failure never fails the run
                log.exception("task %s: a listener of run %s failed", run.task_id, run.run_id)

    # ------------------------------------------------------------------ recording
    def record_run(
        self, task_id: str, kind: RunKind, cause_id: str | None = None, started_at: datetime | None = None
    ) -> tuple[str, int]:
        """Record a run of ``task_id`` that has just ended and snapshot every claim it moved. Returns the run's id
        and how many claims moved. A task that no longer exists records nothing (``("", 0)``)."""
        try:
            scores = self.materials.scores(task_id)
        except NotFoundError:
            return "", 0
        rows = [
            {
                "claim_id": s["claim_id"],
                "alpha": float(s["alpha"]),
                "beta": float(s["beta"]),
                "confidence": float(s["confidence"]),
                "uncertainty": float(s["uncertainty"]),
                "controversy": float(s["controversy"]),
                "supports": int(s["supports_count"]),
                "refutes": int(s["refutes_count"]),
                "neutrals": int(s["neutral_count"]),
            }
            for s in scores
        ]
        run = {
            "id": new_id("run"),
            "task_id": task_id,
            "kind": kind,
            "cause_id": cause_id,
            "started_at": (started_at or datetime.now(UTC)).isoformat(),
        }
        result = self.store.run(
            "timeline/record_run",
            {
                "run": run,
                "claims": rows,
                "keep_snapshots": self.snapshots_per_claim,
                "keep_runs": self.runs_per_task,
            },
        )
        moved = int(result[0]["moved"]) if result else 0
        log.info("task %s: %s run %s moved %d claim(s)", task_id, kind, run["id"], moved)
        if result and moved:
            self._announce(
                RunRecorded(task_id=task_id, run_id=str(run["id"]), kind=kind, cause_id=cause_id, claims_moved=moved)
            )
        return str(run["id"]), moved

    def record_quietly(
        self, task_id: str, kind: RunKind, cause_id: str | None = None, started_at: datetime | None = None
    ) -> None:
        """:meth:`record_run` for the end of work that already succeeded: a failure to record is logged, never
        raised over the work's own result."""
        try:
            self.record_run(task_id, kind, cause_id, started_at)
        except Exception:
            log.exception("task %s: could not record the %s run (the work itself is stored)", task_id, kind)

    def record_rule_deployment(self, component: str, version: int, cause: str) -> list[str]:
        """A learned-rule deployment (a rule put in force, retired or rolled back: rule-set ``version`` of
        ``component``) as a recorded ``rule`` run of every task whose evidence it bears on (cypher/timeline/rule_tasks),
        each with its snapshots; returns those tasks. Never raises over the deployment, which is already stored."""
        try:
            rows = self.store.run("timeline/rule_tasks", {"component": component})
        except Exception:
            log.exception("rule deployment %s v%d: could not list the tasks to record", component, version)
            return []
        tasks = [str(r["task_id"]) for r in rows]
        for task_id in tasks:
            self.record_quietly(task_id, "rule", f"{component} v{version}: {cause}")
        return tasks

    # ------------------------------------------------------------------ reading
    def runs(self, task_id: str, since: str | None, limit: int = 100) -> list[RunInfo]:
        rows = self.store.run("timeline/task_runs", {"task_id": task_id, "since": since, "limit": limit})
        return [RunInfo.model_validate(r) for r in rows]

    def runs_after(self, marks: Mapping[str, int | None], limit: int = RUNS_PER_TASK) -> list[RunsAfter]:
        """Per task of ``marks``, its run counter and its runs numbered above the mark (none for a mark of None),
        oldest first, at most ``limit`` each, from any process (cypher/timeline/runs_after)."""
        if not marks:
            return []
        rows = self.store.run(
            "timeline/runs_after",
            {"marks": [{"task_id": task_id, "after": after} for task_id, after in marks.items()], "limit": limit},
        )
        return [RunsAfter.model_validate(row) for row in rows]

    def _since(self, request: GetChangesRequest) -> str | None:
        if request.since_run is not None and request.since is not None:
            raise InvalidInputError("since_run", "give since_run or since, not both")
        if request.since is not None:
            return request.since
        if request.since_run is not None:
            rows = self.store.run("timeline/run_start", {"task_id": request.task_id, "run_id": request.since_run})
            if not rows:
                raise NotFoundError(
                    f"no run {request.since_run} of task {request.task_id}", hint="get_changes lists the task's runs"
                )
            return str(rows[0]["started_at"])
        latest = self.runs(request.task_id, None, limit=1)
        return latest[0].started_at if latest else None

    def changes(self, request: GetChangesRequest) -> Changes:
        self.tasks.get(request.task_id)
        since = self._since(request)
        rows = self.store.run(
            "timeline/changes",
            {
                "task_id": request.task_id,
                "since": since or "0001-01-01T00:00:00Z",
                "causes_per_claim": request.causes_per_claim,
            },
        )
        now = {s["claim_id"]: s for s in self.materials.scores(request.task_id)}
        listed: list[ClaimMove] = []
        unchanged = 0
        for row in rows:
            score = now.get(row["claim_id"])
            if score is None:
                continue
            current = _point(
                {
                    **score,
                    "supports": score["supports_count"],
                    "refutes": score["refutes_count"],
                    "neutrals": score["neutral_count"],
                }
            )
            before = _point(row["before"], row["before"]["at"]) if row["before"] else None
            new_claim = since is not None and before is None and bool(row["created_since"])
            causes = self._causes(row)
            moved = before is None or any(
                abs(getattr(before, f) - getattr(current, f)) > 1e-9
                for f in ("alpha", "beta", "supports", "refutes", "neutrals")
            )
            if not (moved or causes):
                unchanged += 1
                if not request.include_unchanged:
                    continue
            start = before or PRIOR
            listed.append(
                ClaimMove(
                    claim_id=row["claim_id"],
                    text=row["text"],
                    new_claim=new_claim,
                    before=before,
                    now=current,
                    confidence_change=current.confidence - start.confidence,
                    uncertainty_change=current.uncertainty - start.uncertainty,
                    crossed=crossings(before, current, request.confidence_threshold, request.uncertainty_threshold),
                    causes=causes,
                )
            )
        listed.sort(key=lambda c: (not c.crossed, -abs(c.confidence_change), c.claim_id))
        return Changes(
            task_id=request.task_id,
            since=since,
            runs=self.runs(request.task_id, since),
            claims=listed,
            unchanged=unchanged,
        )

    @staticmethod
    def _causes(row: dict[str, Any]) -> list[Cause]:
        causes = [
            Cause(
                kind="new_evidence",
                at=a["at"],
                edge_id=a["edge_id"],
                relation=a["relation"],
                judge=a.get("judge"),
                weight=a.get("weight"),
                page=_page(a.get("page")),
            )
            for a in row["added"]
        ]
        causes += [judgment_cause(j) for j in row["judged"]]
        causes += [
            Cause(
                kind="retraction",
                at=r["at"],
                edge_ids=list(r["edge_ids"]),
                page=_page(r.get("page")),
                notice_doi=r.get("notice_doi"),
            )
            for r in row["retracted"]
        ]
        causes += [
            Cause(
                kind="page_changed",
                at=r["at"],
                edge_ids=list(r["edge_ids"]),
                restored_edge_ids=list(r["restored_edge_ids"]),
                page=_page(r.get("page")),
            )
            for r in row.get("page_changed", [])
        ]
        causes += [
            Cause(kind="rule_change", at=r["at"], run_id=r.get("run_id"), rule=r.get("rule"))
            for r in row.get("ruled", [])
        ]
        causes.sort(key=lambda c: c.at, reverse=True)
        return causes

    def claim_timeline(self, request: GetClaimTimelineRequest) -> ClaimTimeline:
        found = self.claim_timelines(request.task_id, [request.claim_id], request.limit)
        if request.claim_id not in found:
            raise NotFoundError(
                f"task {request.task_id} has no claim {request.claim_id}", hint="get_materials lists its claims"
            )
        return found[request.claim_id]

    def claim_timelines(self, task_id: str, claim_ids: list[str], limit: int) -> dict[str, ClaimTimeline]:
        """The timelines of those of ``claim_ids`` that are the task's, newest event first, in one query."""
        self.tasks.get(task_id)
        rows = self.store.run("timeline/claim_timeline", {"task_id": task_id, "claim_ids": claim_ids, "limit": limit})
        return {row["claim_id"]: _claim_timeline(task_id, row) for row in rows}


def _claim_timeline(task_id: str, row: Row) -> ClaimTimeline:
    events = []
    for event in row["events"]:
        detail = {k: v for k, v in (event["detail"] or {}).items() if v is not None}
        if event["kind"] == "judgment" and isinstance(detail.get("rationale"), str):
            detail["rationale"] = source_text(detail["rationale"], 500)
        events.append(TimelineEvent(at=event["at"], kind=event["kind"], detail=detail))
    return ClaimTimeline(
        task_id=task_id,
        claim_id=row["claim_id"],
        text=row["text"],
        events=events,
        total=int(row["total"]),
        truncated=int(row["total"]) > len(events),
    )
