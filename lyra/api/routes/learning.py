"""Learning from reviewers: feedback records, proposals and their review, the learned rules."""

from __future__ import annotations

from typing import Annotated

from fastapi import Body, Query

from lyra.api.params import FeedbackListQuery, NoQuery, ProposalsQuery, RulesQuery, SimilarQuery
from lyra.api.routing import FeatureRouter, Ops, TokenReviewer, fields, with_reviewer
from lyra.models import learning

router = FeatureRouter("learning")


@router.operation("get_feedback_for_component")
def feedback_for_component(ops: Ops, query: Annotated[FeedbackListQuery, Query()]) -> learning.FeedbackRecordList:
    """The newest feedback records about one component (stance, claims, domain_policy, ...)."""
    return ops.get_feedback_for_component(learning.FeedbackForComponentRequest(**fields(query)))


@router.operation("get_feedback")
def get_feedback(ops: Ops, record_id: str, _query: Annotated[NoQuery, Query()]) -> learning.FeedbackRecord:
    """One feedback record with the evaluator's classification."""
    return ops.get_feedback(learning.GetFeedbackRequest(id=record_id))


@router.operation("find_similar_feedback")
def find_similar_feedback(ops: Ops, record_id: str, query: Annotated[SimilarQuery, Query()]) -> learning.SimilarRecords:
    """Feedback records whose context (claim, passage, labels, comment) is similar to this one's."""
    return ops.find_similar_feedback(learning.FindSimilarRequest(id=record_id, **fields(query)))


@router.operation("generate_proposals")
def generate_proposals(
    ops: Ops, request: Annotated[learning.GenerateProposalsRequest | None, Body()] = None
) -> learning.ProposalsJob:
    """Queue a batch of proposals from the corrections not used yet (measured: minutes, runs the judge) as a
    job; returns its id at once: GET /jobs/{job_id} shows its progress and result."""
    return ops.queue_proposals(request or learning.GenerateProposalsRequest())


@router.operation("list_proposals")
def list_proposals(ops: Ops, query: Annotated[ProposalsQuery, Query()]) -> learning.ProposalList:
    """Proposals, newest first (status, component, limit)."""
    return ops.list_proposals(learning.ListProposalsRequest(**fields(query)))


@router.operation("get_proposal")
def get_proposal(ops: Ops, proposal_id: str, _query: Annotated[NoQuery, Query()]) -> learning.Proposal:
    """One proposal with its evidence, predicted effect, conflicts and reviews."""
    return ops.get_proposal(learning.GetProposalRequest(id=proposal_id))


@router.operation("approve_proposal")
def approve_proposal(
    ops: Ops,
    reviewer: TokenReviewer,
    proposal_id: str,
    body: Annotated[learning.ApproveBody | None, Body()] = None,
) -> learning.Proposal:
    """One reviewer's approval (two distinct reviewers, or one with override_reason, activate it)."""
    request = learning.ApproveProposalRequest(id=proposal_id, **with_reviewer(fields(body), reviewer))
    return ops.approve_proposal(request)


@router.operation("reject_proposal")
def reject_proposal(
    ops: Ops, reviewer: TokenReviewer, proposal_id: str, body: learning.RejectBody
) -> learning.Proposal:
    """Reject a pending proposal (reason required)."""
    request = learning.RejectProposalRequest(id=proposal_id, **with_reviewer(fields(body), reviewer))
    return ops.reject_proposal(request)


@router.operation("propose_rule")
def propose_rule(ops: Ops, reviewer: TokenReviewer, request: learning.ProposeRuleRequest) -> learning.Proposal:
    """A reviewer-written guideline for a component, as a proposal (the same two-reviewer approval)."""
    return ops.propose_rule(learning.ProposeRuleRequest(**with_reviewer(dict(request), reviewer)))


@router.operation("list_rules")
def list_rules(ops: Ops, query: Annotated[RulesQuery, Query()]) -> learning.RuleList:
    """Learned rules (active, or all with include_retired) and each component's rule-set version."""
    return ops.list_rules(learning.ListRulesRequest(**fields(query)))


@router.operation("rollback_rules")
def rollback_rules(ops: Ops, reviewer: TokenReviewer, request: learning.RollbackRulesRequest) -> learning.RuleList:
    """Restore an earlier rule-set version of a component (0: no rules) as a new version."""
    return ops.rollback_rules(learning.RollbackRulesRequest(**with_reviewer(dict(request), reviewer)))


@router.operation("retire_rule")
def retire_rule(ops: Ops, reviewer: TokenReviewer, rule_id: str, body: learning.RetireBody) -> learning.RuleList:
    """Retire an active learned rule (reason required)."""
    request = learning.RetireRuleRequest(id=rule_id, **with_reviewer(fields(body), reviewer))
    return ops.retire_rule(request)
