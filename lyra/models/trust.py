"""Requests and responses of the trust-and-control operations: feedback, check_domain, calibration.

The ``feedback`` tool keeps the shape of decision record 0006, ``{task_id, action, args}``; ``args`` is validated per
action by the models below, so a wrong or missing field is reported as ``args.<field>``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints, field_validator

from lyra.core.net import domain_char_problem, domain_syntax_error
from lyra.models.api import JsonParams, Request, Response, TaskRequest, multi_line, single_line
from lyra.models.learning import ReviewerId, Tag

Reason = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000), AfterValidator(multi_line)
]
OptionalReason = (
    Annotated[str, StringConstraints(strip_whitespace=True, max_length=2000), AfterValidator(multi_line)] | None
)


def visible_domain(value: str) -> str:
    """A domain name or pattern exactly as given: a space, line break, control or invisible character is refused
    with its code point and position, never trimmed or dropped."""
    problem = domain_char_problem(value)
    if problem is not None:
        raise ValueError(f"{value!r} {problem}")
    return value


Pattern = Annotated[str, StringConstraints(min_length=1, max_length=300), AfterValidator(visible_domain)]
ObjectId = Annotated[str, StringConstraints(min_length=1, max_length=200), AfterValidator(single_line)]
FeedbackAction = Literal[
    "domain_block",
    "domain_unblock",
    "domain_clear_override",
    "page_unblock",
    "claim_reject",
    "claim_restore",
    "edge_correct",
]
BlockReason = Literal["dangerous_pattern", "high_rejection_rate", "denylist", "manual", "unknown"]


# ----------------------------------------------------------------------------- feedback
class FeedbackBody(Request):
    action: FeedbackAction = Field(
        description="domain_block | domain_unblock | domain_clear_override | page_unblock | claim_reject | "
        "claim_restore | edge_correct"
    )
    args: JsonParams = Field(description="the action's arguments (see the tool description)")
    reviewer_id: ReviewerId | None = None
    tags: list[Tag] = Field(default_factory=list, max_length=20, description="labels for the learning loop")


class FeedbackRequest(FeedbackBody, TaskRequest):
    pass


class DomainRuleArgs(Request):
    domain_pattern: Pattern = Field(description="example.com (exact) or *.example.com (its subdomains)")
    reason: Reason


def page_url(value: str) -> str:
    """A page's URL as get_status.blocked_pages shows it: http(s):// or file://, one line, no control character."""
    single_line(value)
    if value != value.strip():
        raise ValueError("must not start or end with spaces")
    if not value.lower().startswith(("http://", "https://", "file://")):
        raise ValueError(f"{value[:80]!r} is not an http(s):// or file:// URL")
    return value


class PageUnblockArgs(Request):
    url: Annotated[str, StringConstraints(min_length=1, max_length=4000), AfterValidator(page_url)] = Field(
        description="the blocked page's URL (get_status.blocked_pages: url or page_url)"
    )
    reason: Reason


class ClaimRejectArgs(Request):
    claim_id: ObjectId
    reason: Reason


class ClaimRestoreArgs(Request):
    claim_id: ObjectId
    reason: OptionalReason = None


class EdgeCorrectArgs(Request):
    edge_id: ObjectId
    correct_relation: Literal["supports", "refutes", "neutral"]
    reason: OptionalReason = None


ARGS_FOR_ACTION: dict[str, type[Request]] = {
    "domain_block": DomainRuleArgs,
    "domain_unblock": DomainRuleArgs,
    "domain_clear_override": DomainRuleArgs,
    "page_unblock": PageUnblockArgs,
    "claim_reject": ClaimRejectArgs,
    "claim_restore": ClaimRestoreArgs,
    "edge_correct": EdgeCorrectArgs,
}


class FeedbackResponse(Response):
    task_id: str
    action: str
    event_id: str
    changed: dict[str, Any] = Field(description="what the action changed (before and after)")
    warnings: list[str] = Field(default_factory=list)
    record_id: str | None = Field(default=None, description="the feedback record the learning loop keeps of it")
    classification: str | None = Field(default=None, description="the evaluator's classification of the record")


# ----------------------------------------------------------------------------- domains
class CheckDomainRequest(Request):
    domain: Annotated[str, StringConstraints(min_length=1, max_length=253)] = Field(
        description="a domain name, e.g. example.org (no wildcard, scheme, path or port)"
    )

    @field_validator("domain")
    @classmethod
    def _domain_syntax(cls, value: str) -> str:
        problem = domain_syntax_error(value)
        if problem:
            raise ValueError(f"{value!r} {problem}")
        return value


class MatchedRule(Response):
    rule_id: str
    domain_pattern: str
    decision: Literal["block", "unblock"]
    reason: str | None
    updated_at: str | None


class DomainDecision(Response):
    domain: str
    allowed: bool
    domain_block_reason: BlockReason | None = Field(
        description="why it is blocked now; when allowed only because an override lifted a block, that block's reason"
    )
    domain_unblock_risk: Literal["high", "low"] | None
    reason: str
    matched_pattern: str | None = Field(description="the override rule's or denylist entry's pattern that decided")
    override: MatchedRule | None
    domain_category: str
    original_domain_category: str
    category_weight: float
    qps: float
    max_pages_per_day: int
    rejection_rates: dict[str, Any] | None = Field(
        default=None,
        description="claim-based rejection rates of the domain (check_domain only): its claims (extracted from its "
        "pages, or rejected for a dangerous pattern it served), security / manual / combined rejection counts and "
        "rates, and the domain_rejection_flagged mark (a high rate on a domain above unverified/low: marked, not "
        "blocked)",
    )


# ----------------------------------------------------------------------------- calibration
class CalibrationMetricsRequest(Request):
    action: Literal["get_stats", "evaluate", "get_evaluations", "fit"] = Field(
        description="get_stats: samples per source and the latest evaluation; evaluate: measure and store a "
        "versioned evaluation; get_evaluations: stored evaluations; fit: fit a calibrator on held-out-checked "
        "samples and store it as a new version"
    )
    method: Literal["platt", "temperature"] = "platt"
    activate: bool = Field(default=False, description="fit only: apply the new calibrator to new edges")
    limit: int = Field(default=20, ge=1, le=200, description="get_evaluations only")


class CalibrationRollbackRequest(Request):
    version: int = Field(ge=0, le=1_000_000, description="the calibrator version to make active; 0 turns it off")


class CalibrationResponse(Response):
    action: str
    result: dict[str, Any]
