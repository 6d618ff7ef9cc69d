"""Requests and responses of the learning loop (decision record 0013): feedback records, proposals, their review, and
rules.

Records and reviews are append-only in Neo4j; a proposal's status and the active rule set are derived from them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints

from lyra.models.api import Request, Response, multi_line, single_line

Classification = Literal["generalizable_high", "generalizable_low", "edge_case", "ambiguous", "positive"]
RuleType = Literal["NEGATIVE_EXAMPLE", "POSITIVE_EXAMPLE", "GUIDELINE", "CONSTRAINT", "CALIBRATION_REFIT"]
ProposalStatus = Literal["pending", "approved", "rejected"]
Component = Literal[
    "stance", "stance_llm", "stance_trained", "claim_extraction", "citation_usefulness", "citation_detection",
    "calibration", "domain_policy", "claims", "evidence_ranking",
]  # fmt: skip
RuleComponent = Literal[
    "stance_llm", "stance_trained", "claim_extraction", "citation_usefulness", "citation_detection", "evidence_ranking",
]  # fmt: skip

ReviewerId = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=120, pattern=r"^[A-Za-z0-9_.@:+-]+$"),
    Field(description="who reviews: letters, digits and _ . @ : + - (default 'anonymous')"),
]
Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=60), AfterValidator(single_line)]
Reason = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000), AfterValidator(multi_line)
]
RecordId = Annotated[str, StringConstraints(min_length=1, max_length=80, pattern=r"^[a-z]{3}_[A-Za-z0-9_-]+$")]
ANONYMOUS = "anonymous"


# ----------------------------------------------------------------------------- records
class FeedbackRecord(Response):
    id: str
    event_id: str = Field(description="the FeedbackEvent of the action")
    kind: str = Field(description="correction | confirmation | claim_reject | claim_restore | domain_rule")
    component: str = Field(
        description="what the feedback is about: stance (a judge verdict), claim_extraction (a claim the LLM "
        "extracted), claims (a claim a person wrote), domain_policy"
    )
    task_id: str
    edge_id: str | None = None
    claim_id: str | None = None
    domain: str | None = None
    judge_id: str | None = Field(default=None, description="the judge that made the verdict (when recorded)")
    rules_version: int | None = Field(
        default=None, description="the learned rule-set version the verdict or extraction was made under"
    )
    predicted_label: str | None = None
    predicted_confidence: float | None = None
    correct_label: str | None = None
    premise: str | None = None
    hypothesis: str | None = None
    topic: str | None = Field(default=None, description="an extracted claim's topic: the task's hypothesis")
    reviewer_id: str
    tags: list[str] = Field(default_factory=list)
    comment: str | None = None
    created_at: str
    classification: Classification
    classification_confidence: float
    classification_rationale: str
    similar_ids: list[str] = Field(default_factory=list)


# requests about one record (feedback, proposal, rule): REST takes its id from the path
class RecordRequest(Request):
    id: RecordId


class GetFeedbackRequest(RecordRequest):
    pass


class FeedbackForComponentRequest(Request):
    component: Component
    limit: int = Field(default=100, ge=1, le=1000)


class FindSimilarFields(Request):
    threshold: float = Field(default=0.8, ge=0.0, le=1.0)
    limit: int = Field(default=20, ge=1, le=200)


class FindSimilarRequest(FindSimilarFields, RecordRequest):
    pass


class SimilarRecord(Response):
    record: FeedbackRecord
    similarity: float


class FeedbackRecordList(Response):
    records: list[FeedbackRecord]


class SimilarRecords(Response):
    id: str
    threshold: float
    similar: list[SimilarRecord]


# ----------------------------------------------------------------------------- proposals
class Conflict(Response):
    rule_id: str
    rule_content: str
    reason: str


class Review(Response):
    decision: Literal["approve", "reject"]
    reviewer_id: str
    reason: str | None = None
    override: bool = False
    at: str


class Proposal(Response):
    id: str
    status: ProposalStatus
    rule_type: RuleType
    component: str
    key: str = Field(description="what the rule is about (e.g. stance:neutral->entailment): consolidation key")
    content: str = Field(description="the exact change: a guideline sentence, an example (JSON), a calibrator")
    insertion_point: str
    evidence_ids: list[str] = Field(description="the feedback records the proposal is built from")
    evidence_summary: str
    classification_confidence: float
    predicted_effect: dict[str, Any] = Field(description="measured offline before any approval")
    conflicts: list[Conflict] = Field(default_factory=list)
    reviews: list[Review] = Field(default_factory=list)
    rule_id: str | None = Field(default=None, description="the rule it became when approved")
    created_at: str


class ProposalList(Response):
    proposals: list[Proposal]


class GenerateProposalsRequest(Request):
    component: Literal["stance"] = "stance"
    measure: bool = Field(default=True, description="measure each proposal's predicted effect (slow: runs the judge)")


class GenerateProposalsResponse(Response):
    created: list[Proposal]
    consolidated: dict[str, list[str]] = Field(
        default_factory=dict, description="pending proposal id -> evidence record ids added to it"
    )
    skipped: list[str] = Field(default_factory=list, description="why a group of records gave no proposal")


class ProposalsJob(Response):
    """A proposal batch queued as a job (it measures each proposal with the judge: minutes)."""

    job_id: str
    state: str = Field(description="the job's state: queued, or running when a batch was already under way")
    already_queued: bool = Field(description="a batch was already queued or running: this is that job")
    next_step: str


class ProposeRuleRequest(Request):
    """A reviewer writes a guideline for a component (for components no correction pattern proposes for yet)."""

    component: RuleComponent
    content: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=10, max_length=500), AfterValidator(single_line)
    ] = Field(description="the guideline sentence, as the prompt's learned-rules section will show it")
    reason: Reason = Field(description="why the rule is needed (kept as the evidence summary)")
    evidence_ids: list[RecordId] = Field(
        default_factory=list, max_length=100, description="feedback records it rests on"
    )
    reviewer_id: ReviewerId | None = None
    measure: bool = Field(default=True, description="stance_llm only: measure the predicted effect (slow)")


class ListProposalsRequest(Request):
    status: ProposalStatus | None = None
    component: RuleComponent | Literal["calibration"] | None = None
    limit: int = Field(default=50, ge=1, le=500)


class GetProposalRequest(RecordRequest):
    pass


class ApproveBody(Request):
    reviewer_id: ReviewerId | None = None
    override_reason: Reason | None = Field(
        default=None,
        description="approve alone (without a second reviewer) or despite a flagged conflict; logged",
    )


class ApproveProposalRequest(ApproveBody, RecordRequest):
    pass


class RejectBody(Request):
    reason: Reason = Field(description="why the proposal is rejected (required)")
    reviewer_id: ReviewerId | None = None


class RejectProposalRequest(RejectBody, RecordRequest):
    pass


# ----------------------------------------------------------------------------- rules
class Rule(Response):
    id: str
    component: str
    rule_type: RuleType
    key: str
    content: str
    proposal_id: str
    status: Literal["active", "retired"]
    activated_at: str
    predicted_effect: dict[str, Any] = Field(default_factory=dict)
    observed: dict[str, Any] = Field(
        default_factory=dict, description="reviews of verdicts made under the rule: kept / corrected"
    )


class RuleSet(Response):
    component: str
    version: int
    rule_ids: list[str]
    cause: str
    reviewer_id: str | None = None
    reason: str | None = None
    created_at: str | None = None


class ListRulesRequest(Request):
    component: RuleComponent | Literal["calibration"] | None = None
    include_retired: bool = False


class RuleList(Response):
    rules: list[Rule]
    rule_sets: list[RuleSet] = Field(description="the current rule-set version per component")


class RetireBody(Request):
    reason: Reason
    reviewer_id: ReviewerId | None = None


class RetireRuleRequest(RetireBody, RecordRequest):
    pass


class RollbackRulesRequest(Request):
    component: RuleComponent
    version: int = Field(ge=0, le=1_000_000, description="the rule-set version to restore (0: no rules)")
    reason: Reason
    reviewer_id: ReviewerId | None = None
