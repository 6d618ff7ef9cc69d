"""The learning loop's deterministic parts, free of I/O (unit-tested with plain values): how a feedback record is
classified, what a correction pattern proposes, and which active rule a proposal contradicts.

Classification rules, first match wins (:func:`classify`):

1. ``positive`` — the reviewer kept the judge's label (an ``edge_correct`` to the same relation). Confidence 0.9.
2. not a model's output (domain feedback, a claim a person wrote) — ``edge_case``, confidence 0.5: kept for the
   audit, no rule. A claim the LLM extracted is the claim extractor's output: its rejection is a correction
   ``extracted -> rejected`` and its restoration a kept label (``adopted``), and the rules below apply to them.
3. ``ambiguous`` — reviewers disagree: another record about the same edge (or extracted claim), or about a
   near-identical context (similarity >= 0.95), gives a different correct label. Confidence 0.5 + 0.1 per
   disagreeing record (max 0.9).
4. ``generalizable_high`` — the same error pattern (component, predicted label -> correct label) was corrected at
   least ``high_min`` times (this one included) on at least 3 distinct claims. Confidence 0.5 + 0.05 per record,
   + 0.1 with two or more reviewers, + 0.1 across two or more tasks (max 0.95).
5. ``generalizable_low`` — the pattern recurs (two or more records) but not that widely. Confidence 0.4 + 0.05 per
   record (max 0.7).
6. ``edge_case`` — the first correction of its kind (0.6), or a relabel of an earlier human label that no other
   record contradicts (0.5; not a judge error, so never part of a pattern).

The local LLM is not consulted: every case above is decided by these counts (a later slice may ask it to word the
rationale or to split an ambiguous cluster).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lyra.core.errors import ConflictError, InvalidInputError
from lyra.models.learning import Classification

EXTRACTION_RECORDS = "claim_extraction"  # the records of reviews of claims the LLM extracted (their component)
EXTRACTION_PATTERN = "extracted->rejected"  # a reviewer rejected a claim the LLM extracted
DUPLICATE_SIMILARITY = 0.95  # contexts at least this similar are treated as the same case (rule 3)
MIN_DISTINCT_CLAIMS_HIGH = 3

# The GUIDELINE each stance error pattern proposes: key "predicted->correct". Worded for the stance LLM's two
# yes/no questions (config/prompts/stance_question.j2), where it lands in the "learned rules" section.
STANCE_GUIDELINES: dict[str, str] = {
    "entailment->neutral": (
        "A passage on the claim's topic that does not report a result for the exact intervention, outcome and "
        "population the claim names does not show the claim TRUE: answer no to TRUE."
    ),
    "contradiction->neutral": (
        "A passage that does not test the exact intervention, outcome and population the claim names is not "
        "evidence that the claim is FALSE, even when it reports other null or opposite findings: answer no to FALSE."
    ),
    "neutral->entailment": (
        "When the passage reports a result that agrees with the claim, even in other words or only in numbers, "
        "answer yes to TRUE."
    ),
    "neutral->contradiction": (
        "When the passage reports no effect, no significant difference or the opposite direction for what the claim "
        "asserts, answer yes to FALSE."
    ),
    "entailment->contradiction": (
        "Check the direction of the effect: if the passage finds the opposite direction or no effect for what the "
        "claim asserts, the claim is FALSE, not TRUE."
    ),
    "contradiction->entailment": (
        "Check the direction of the effect: a passage that finds the effect the claim states (a decrease when the "
        "claim says decrease) shows the claim TRUE, not FALSE."
    ),
}


@dataclass(frozen=True)
class RecordFacts:
    """What the evaluator reads of a feedback record."""

    id: str
    kind: str  # correction | confirmation | claim_reject | claim_restore | domain_rule
    component: str
    task_id: str
    reviewer_id: str
    edge_id: str | None = None
    claim_id: str | None = None
    predicted_label: str | None = None
    correct_label: str | None = None

    @property
    def case_id(self) -> str | None:
        """What two records must share to be about the same case: the edge of a verdict, the claim of an extraction."""
        if self.edge_id:
            return f"edge:{self.edge_id}"
        return f"claim:{self.claim_id}" if self.component == EXTRACTION_RECORDS and self.claim_id else None

    @property
    def pattern(self) -> str | None:
        """``predicted->correct`` for a correction of a verdict, otherwise None."""
        if self.kind != "correction" or not self.predicted_label or not self.correct_label:
            return None
        return f"{self.predicted_label}->{self.correct_label}"

    @property
    def judged_label(self) -> str | None:
        """The label the reviewer says is right (kept for a confirmation, the correction's otherwise)."""
        return self.correct_label if self.kind in ("correction", "confirmation", "relabel") else None


@dataclass(frozen=True)
class Evaluation:
    classification: Classification
    confidence: float
    rationale: str
    similar_ids: tuple[str, ...] = ()


def classify(
    record: RecordFacts,
    history: Sequence[RecordFacts],
    similar: Sequence[tuple[RecordFacts, float]] = (),
    high_min: int = 5,
) -> Evaluation:
    """Classify ``record`` against the component's earlier records (``history``, without ``record``) and the
    records whose context is similar to its own (``similar``: record, cosine). See the module's rules."""
    similar_ids = tuple(r.id for r, _ in similar)
    if record.kind == "confirmation":
        return Evaluation("positive", 0.9, f"the reviewer kept the judge's label {record.correct_label}", similar_ids)
    if record.kind not in ("correction", "relabel") or not record.correct_label:
        return Evaluation(
            "edge_case", 0.5, f"{record.kind} feedback is not a judge verdict: kept for the audit", similar_ids
        )
    same_case = {r.id: r for r in history if record.case_id and r.case_id == record.case_id}
    same_case.update({r.id: r for r, score in similar if score >= DUPLICATE_SIMILARITY})
    disagreeing = [r for r in same_case.values() if r.judged_label and r.judged_label != record.correct_label]
    if disagreeing:
        others = ", ".join(sorted({f"{r.reviewer_id}: {r.judged_label}" for r in disagreeing}))
        return Evaluation(
            "ambiguous",
            min(0.9, 0.5 + 0.1 * len(disagreeing)),
            f"reviewers disagree on this case ({record.reviewer_id}: {record.correct_label}; {others})",
            similar_ids,
        )
    if record.pattern is None:  # a relabel of an earlier human label that nobody contradicts
        return Evaluation("edge_case", 0.5, "relabels an earlier human label; not a judge error", similar_ids)
    pattern = [r for r in history if r.component == record.component and r.pattern == record.pattern]
    group = [*pattern, record]
    n = len(group)
    claims = {r.claim_id or r.id for r in group}
    reviewers = {r.reviewer_id for r in group}
    tasks = {r.task_id for r in group}
    where = f"{n} corrections {record.pattern} on {len(claims)} claims, {len(tasks)} tasks, {len(reviewers)} reviewers"
    if n >= high_min and len(claims) >= MIN_DISTINCT_CLAIMS_HIGH:
        confidence = 0.5 + 0.05 * n + (0.1 if len(reviewers) >= 2 else 0.0) + (0.1 if len(tasks) >= 2 else 0.0)
        return Evaluation("generalizable_high", round(min(0.95, confidence), 3), f"systematic: {where}", similar_ids)
    if n >= 2:
        return Evaluation("generalizable_low", round(min(0.7, 0.4 + 0.05 * n), 3), f"recurring: {where}", similar_ids)
    return Evaluation("edge_case", 0.6, f"first correction {record.pattern} of the {record.component}", similar_ids)


def reverse_pattern(key: str) -> str:
    """``a->b`` becomes ``b->a`` (the pattern whose rule would pull the other way)."""
    predicted, _, correct = key.partition("->")
    return f"{correct}->{predicted}"


@dataclass(frozen=True)
class ActiveRuleFacts:
    id: str
    component: str
    rule_type: str
    key: str
    content: str


def conflicts(component: str, key: str, active: Sequence[ActiveRuleFacts]) -> list[tuple[ActiveRuleFacts, str]]:
    """Active rules of ``component`` a new rule with ``key`` (``component:predicted->correct``) contradicts: those
    that pull the opposite way (the reverse pattern). Each with the reason."""
    found: list[tuple[ActiveRuleFacts, str]] = []
    prefix, _, pattern = key.partition(":")
    reverse = f"{prefix}:{reverse_pattern(pattern)}"
    for rule in active:
        if rule.component == component and rule.key == reverse:
            found.append((rule, f"the active rule corrects {reverse_pattern(pattern)}, this one {pattern}"))
    return found


@dataclass(frozen=True)
class ApprovalFacts:
    """What the approval rules read of a proposal and the component it changes."""

    id: str
    status: str
    rule_type: str
    approvers: frozenset[str]  # reviewers who approved it so far
    conflicts: tuple[str, ...] = ()  # "rule_id: reason" of the active rules it contradicts
    measured: bool = True  # its predicted effect was measured
    active_rules: int = 0  # active rules of its component now
    max_rules: int = 20
    regression_delta: float | None = None  # measured macro-F1 change on the regression set (None: not measured)
    regression_tolerance: float = 0.05  # how much worse the regression set may get


def check_approval(proposal: ApprovalFacts, reviewer: str, override_reason: str | None) -> None:
    """Refuse an approval that the meta-review rules do not allow (raises; returns when it may be recorded):
    the proposal must be pending; a reviewer approves once; a proposal that contradicts an active rule, or a
    guideline whose effect was not measured, or one measured to make the regression set worse by more than the
    tolerance (the deploy gate), needs an ``override_reason``; a component holds at most ``max_rules`` active rules."""
    if proposal.status != "pending":
        raise ConflictError(f"proposal {proposal.id} is {proposal.status}, not pending")
    if reviewer in proposal.approvers:
        raise ConflictError(
            f"{reviewer} already approved proposal {proposal.id}; it needs a different reviewer",
            hint="another reviewer approves it, or one approves with override_reason",
        )
    if proposal.conflicts and not override_reason:
        raise InvalidInputError(
            "override_reason",
            f"proposal {proposal.id} contradicts active rule(s) ({'; '.join(proposal.conflicts)}); retire them "
            "first or approve with an override_reason",
        )
    if proposal.rule_type == "GUIDELINE" and not proposal.measured and not override_reason:
        raise InvalidInputError(
            "override_reason",
            f"proposal {proposal.id} has no measured predicted effect; measure it (generate_proposals with "
            "measure=true) or approve with an override_reason",
        )
    worse = proposal.regression_delta is not None and proposal.regression_delta < -proposal.regression_tolerance
    if worse and not override_reason:
        raise InvalidInputError(
            "override_reason",
            f"proposal {proposal.id} was measured to lower the regression set's macro-F1 by "
            f"{-(proposal.regression_delta or 0.0):.3f} (tolerance {proposal.regression_tolerance}); reject it or "
            "approve with an override_reason",
        )
    if proposal.active_rules >= proposal.max_rules:
        raise ConflictError(
            f"the component already has {proposal.active_rules} active rules (at most {proposal.max_rules})",
            hint="retire_rule one first",
        )


def takes_effect(approvers: int, required: int, override_reason: str | None) -> bool:
    """After an approval: the proposal takes effect with ``required`` distinct approvers, or at once with an
    override reason (logged with the review)."""
    return approvers >= required or override_reason is not None
