"""Living evidence: what changed in a task since a run or a moment, and one claim's timeline."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints, field_validator

from lyra.models.api import Request, Response, SourceText, TaskRequest, single_line

RUN_ID_PATTERN = r"^run_[0-9a-f]{8,64}$"
RunKind = Literal["ingest", "research", "judge_remaining", "refresh", "feedback", "judgments", "rule", "retractions"]
CauseKind = Literal[
    "new_evidence", "correction", "assistant_judgment", "judge_change", "retraction", "page_changed", "rule_change"
]


class GetChangesFields(Request):
    since_run: str | None = Field(
        default=None,
        pattern=RUN_ID_PATTERN,
        description="a run id (get_changes lists the task's runs): the changes from that run's start on",
    )
    since: str | None = Field(
        default=None,
        max_length=64,
        description="an ISO 8601 time with a zone (e.g. 2026-11-01T00:00:00Z): the changes from then on. "
        "Neither since nor since_run: the changes of the task's latest run",
    )
    confidence_threshold: float = Field(
        default=0.5, ge=0.0, le=1.0, description="a claim whose confidence crossed this value is listed first"
    )
    uncertainty_threshold: float = Field(
        default=0.1, ge=0.0, le=1.0, description="a claim whose uncertainty fell below this value is listed first"
    )
    causes_per_claim: int = Field(default=20, ge=1, le=500, description="at most this many causes per claim")
    include_unchanged: bool = Field(default=False, description="list the claims that did not move too")

    @field_validator("since")
    @classmethod
    def _zoned_time(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValueError(f"since: not an ISO 8601 time ({exc})") from None
        if parsed.tzinfo is None:
            raise ValueError("since: give a time zone (e.g. ...Z or +01:00)")
        return parsed.isoformat()


class GetChangesRequest(GetChangesFields, TaskRequest):
    pass


class ScorePoint(Response):
    """Where a claim stood: Beta(alpha, beta) and what follows from it, with its evidence counts."""

    confidence: float
    uncertainty: float
    controversy: float
    alpha: float
    beta: float
    supports: int
    refutes: int
    neutrals: int
    at: str | None = Field(default=None, description="when (a snapshot's time; null: now)")


class ChangePage(Response):
    source_id: str
    url: str | None
    doi: str | None
    title: SourceText | None


class Cause(Response):
    """One thing that moved a claim: new evidence, a person's correction, an assistant's verdict, another judge's
    change, a retraction of a source, a changed page whose passages left it or came back (decision record 0016), or
    a learned-rule deployment."""

    kind: CauseKind
    at: str
    edge_id: str | None = None
    edge_ids: list[str] = Field(
        default_factory=list,
        description="a retraction: the claim's edges from that page; page_changed: its edges whose passage left the "
        "page (they stopped counting)",
    )
    restored_edge_ids: list[str] = Field(
        default_factory=list,
        description="page_changed: the claim's edges whose passage is on the page again (they count again)",
    )
    relation: str | None = None
    previous_relation: str | None = None
    judge: str | None = None
    previous_judge: str | None = None
    weight: float | None = Field(default=None, description="what the edge adds to alpha or beta now")
    rationale: SourceText | None = Field(default=None, description="the judge's stated reason (an assistant's text)")
    page: ChangePage | None = None
    notice_doi: str | None = None
    run_id: str | None = Field(default=None, description="a rule change: the recorded 'rule' run")
    rule: str | None = Field(
        default=None, description="a rule change: what was deployed (component, rule-set version, approval or rollback)"
    )


class ClaimMove(Response):
    claim_id: str
    text: str
    new_claim: bool = Field(description="the claim was added after the moment compared with")
    before: ScorePoint | None = Field(description="its newest snapshot from before the moment; null: none")
    now: ScorePoint
    confidence_change: float
    uncertainty_change: float
    crossed: list[str] = Field(
        description="thresholds crossed: 'confidence above 0.5', 'confidence below 0.5', 'uncertainty below 0.1'"
    )
    causes: list[Cause]


class RunInfo(Response):
    run_id: str
    kind: str
    cause_id: str | None
    started_at: str
    finished_at: str
    claims_moved: int


class RunRecorded(Response):
    """A run that moved claims, as announced to in-process listeners (the task's webhook)."""

    task_id: str
    run_id: str
    kind: str
    cause_id: str | None
    claims_moved: int


class NumberedRun(Response):
    """A run with its number in its task's sequence (numbers follow commit order: cypher/timeline/record_run)."""

    run_id: str
    seq: int
    claims_moved: int


class RunsAfter(Response):
    """A watched task's run counter and its runs numbered above a high-water mark, oldest first (what the MCP
    changes watcher polls: cypher/timeline/runs_after)."""

    task_id: str
    latest: int
    runs: list[NumberedRun]


class Changes(Response):
    task_id: str
    since: str | None = Field(description="the moment compared with (null: the task's beginning)")
    runs: list[RunInfo] = Field(description="the task's runs from that moment on, newest first")
    claims: list[ClaimMove] = Field(
        description="claims that crossed a threshold first, then by how far their confidence moved"
    )
    unchanged: int = Field(description="claims that did not move (listed only with include_unchanged)")


class GetClaimTimelineFields(Request):
    limit: int = Field(default=200, ge=1, le=5000, description="at most this many events, newest first")


class ClaimRequest(TaskRequest):
    claim_id: Annotated[str, StringConstraints(min_length=1, max_length=200), AfterValidator(single_line)] = Field(
        description="the claim's id (get_materials lists them)"
    )


class GetClaimTimelineRequest(GetClaimTimelineFields, ClaimRequest):
    pass


class TimelineEvent(Response):
    at: str | None
    kind: Literal["snapshot", "edge_added", "judgment", "retraction", "passage_superseded", "passage_restored"]
    detail: dict[str, Any]


class ClaimTimeline(Response):
    task_id: str
    claim_id: str
    text: str
    events: list[TimelineEvent] = Field(description="newest first")
    total: int
    truncated: bool
