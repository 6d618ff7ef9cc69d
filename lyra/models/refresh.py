"""Living evidence: a task's retraction check and its refresh (docs/concepts/retractions.md)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from lyra.models.api import Request, Response, RetractionNotice, TargetKind, TaskRequest

SCHEDULE_UNITS = {"m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}
SCHEDULE_MAX_SECONDS = 366 * 86_400  # a schedule repeats at most once a year (docs/concepts/living-evidence.md)
SCHEDULE_MIN_SECONDS = 3600  # at least an hour between scheduled refreshes (LYRA_SCHEDULE_MIN_SECONDS)
SCHEDULE_OFF = "off"
_SCHEDULE = re.compile(r"^([1-9][0-9]{0,5})([mhdw])$")


def parse_every(text: str) -> int:
    """The seconds of a schedule's period: a whole number and one unit, ``30m``, ``12h``, ``7d`` or ``2w``. Raises
    ValueError naming the problem; the minimum is the service's (LYRA_SCHEDULE_MIN_SECONDS), the maximum 366 days."""
    match = _SCHEDULE.fullmatch(text)
    if match is None:
        raise ValueError(
            f"schedule: {text!r} is not a period: a whole number and one unit m, h, d or w (30m, 12h, 7d, 2w), "
            f"or {SCHEDULE_OFF!r} to clear the schedule"
        )
    seconds = int(match.group(1)) * SCHEDULE_UNITS[match.group(2)]
    if seconds > SCHEDULE_MAX_SECONDS:
        raise ValueError(f"schedule: {text} is longer than the maximum, 366d")
    return seconds


PageRetractionState = Literal["retracted", "has_concern", "corrected", "none", "unknown"]


class PageRetraction(Response):
    """A page's retraction status after a check."""

    source_id: str
    doi: str
    state: PageRetractionState = Field(
        description="retracted (its evidence no longer counts), has_concern / corrected (shown, never counted), none, "
        "or unknown (no source could answer: nothing was written)"
    )
    newly_retracted: bool = Field(default=False, description="found retracted by this check")
    retracted_at: str | None = None
    notices: list[RetractionNotice] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list, description="why a source could not answer")


class RetractionCheck(Response):
    task_id: str
    run_id: str | None = Field(description="the recorded 'retractions' run (get_changes lists it)")
    pages_checked: int
    pages: list[PageRetraction] = Field(description="every page checked, retracted ones first")
    edges_retracted: int = Field(description="stance edges that stopped counting in this check")
    claims_moved: int


class RefreshBody(Request):
    max_targets: int = Field(
        default=20,
        ge=0,
        le=500,
        description="queue at most this many of the task's earlier targets (queries, URLs, DOIs) again as new "
        "jobs; 0 only checks retractions",
    )
    max_pages: int = Field(
        default=200, ge=0, le=5000, description="check the retraction status of at most this many DOI pages"
    )
    max_rechecks: int = Field(
        default=50,
        ge=0,
        le=1000,
        description="ask at most this many of the task's known web pages, least recently checked first, whether "
        "they changed (a conditional GET with their ETag / Last-Modified; a changed page is queued to be read "
        "again), and at most this many of its paper pages (Semantic Scholar / OpenAlex abstracts) by their "
        "metadata (the abstract read fresh; a changed one is queued to be read again); 0 re-checks none",
    )

    schedule: str | None = Field(
        default=None,
        max_length=16,
        description="refresh the task again every so often while `lyra serve` runs, with the same max_targets and "
        "max_pages: a whole number and a unit, 30m, 12h, 7d or 2w (at least 1h by default, at most 366d); 'off' "
        "clears the schedule; null leaves it as it is. The first scheduled refresh comes one period after this one",
    )

    @field_validator("schedule")
    @classmethod
    def _period(cls, value: str | None) -> str | None:
        if value is None or value == SCHEDULE_OFF:
            return value
        parse_every(value)
        return value


class RefreshRequest(RefreshBody, TaskRequest):
    pass


class RefreshedTarget(Response):
    kind: TargetKind
    value: str
    job_id: str | None = Field(description="the new job (null: not queued)")
    status: Literal["queued", "pending", "over_budget", "rechecked"] = Field(
        description="queued again; pending: a job for it is still queued or running; over_budget: beyond "
        "max_targets; rechecked: a known page, asked with a conditional GET instead (see pages)"
    )


class RefreshSchedule(Response):
    """A task's refresh schedule (stored on the task; `lyra serve` queues the refresh when it is due)."""

    every: str = Field(description="the period, e.g. 7d")
    every_seconds: int
    max_targets: int
    max_pages: int
    next_run_at: str = Field(description="when the next scheduled refresh is due (UTC)")
    last_run_at: str | None = Field(default=None, description="when a scheduled refresh was last queued")


PageCheckResult = Literal["not_modified", "same_hash", "changed", "first_check", "failed"]


class PageCheck(Response):
    """One known page re-checked by a refresh."""

    source_id: str
    url: str
    result: PageCheckResult = Field(
        description="not_modified: HTTP 304, nothing read; same_hash: read, the same content; changed: other "
        "content, queued to be read again; first_check: no content hash was kept when it was read, so it is kept "
        "now and nothing is re-read; failed: the fetcher refused or the request failed (see failure, reason)"
    )
    status: int | None = Field(description="the HTTP status (null: no answer)")
    reason: str
    failure: str | None = Field(default=None, description="the fetcher's code when the check failed")
    job_id: str | None = Field(default=None, description="the job queued to read a changed page again")


class PageChecks(Response):
    """What a refresh's re-check of known pages found (docs/concepts/living-evidence.md)."""

    checked: int
    unchanged: int = Field(description="not_modified + same_hash")
    not_modified: int
    same_hash: int
    changed: int
    first_check: int
    failed: int
    requeued: int = Field(description="changed pages queued to be read again")
    pages: list[PageCheck]


PaperCheckResult = Literal["unchanged", "new_version", "changed", "first_check", "failed"]


class PaperCheck(Response):
    """One known paper page (a Semantic Scholar / OpenAlex abstract) re-checked by its metadata."""

    source_id: str
    url: str
    result: PaperCheckResult = Field(
        description="unchanged: the same abstract and the same record version; new_version: the record's version "
        "(OpenAlex's updated_date) moved but the abstract is the same, nothing is re-read; changed: another "
        "abstract, queued to be read again; first_check: no abstract hash was kept when it was read, so it is kept "
        "now and nothing is re-read; failed: no source answered or none knows the paper now (see reason)"
    )
    version: str | None = Field(default=None, description="the record's version now (OpenAlex's updated_date)")
    reason: str
    job_id: str | None = Field(default=None, description="the job queued to read a changed paper again")


class PaperChecks(Response):
    """What a refresh's re-check of known paper pages by their metadata found (docs/concepts/living-evidence.md)."""

    checked: int
    unchanged: int = Field(description="unchanged + new_version")
    new_version: int
    changed: int
    first_check: int
    failed: int
    requeued: int = Field(description="changed papers queued to be read again")
    papers: list[PaperCheck]


class RefreshResult(Response):
    task_id: str
    refresh_id: str = Field(description="the refresh's own id (its jobs carry it)")
    run_id: str | None = Field(description="the recorded 'refresh' run (get_changes lists it)")
    queued: int
    targets: list[RefreshedTarget]
    retractions: RetractionCheck
    schedule: RefreshSchedule | None = Field(
        default=None, description="the task's refresh schedule after this call (null: none)"
    )
    pages: PageChecks | None = Field(
        default=None, description="the known web pages re-checked (null: web fetching is not configured)"
    )
    papers: PaperChecks | None = Field(
        default=None,
        description="the known paper pages re-checked by their metadata (null: the scholarly sources are not "
        "configured)",
    )
