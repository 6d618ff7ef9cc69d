"""Trust and control: human corrections, the domain decision, the NLI judge's calibration."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from lyra.api.params import NoQuery, TaskIdPath
from lyra.api.routing import FeatureRouter, Ops, TokenReviewer, fields, with_reviewer
from lyra.models import trust

router = FeatureRouter("trust")


@router.operation("feedback")
def feedback(
    ops: Ops, reviewer: TokenReviewer, task_id: TaskIdPath, body: trust.FeedbackBody
) -> trust.FeedbackResponse:
    """A human correction: domain_block | domain_unblock | domain_clear_override | page_unblock | claim_reject |
    claim_restore | edge_correct, with its args."""
    return ops.feedback(trust.FeedbackRequest(task_id=task_id, **with_reviewer(fields(body), reviewer)))


@router.operation("check_domain")
def check_domain(ops: Ops, domain: str, _query: Annotated[NoQuery, Query()]) -> trust.DomainDecision:
    """May Lyra fetch / use this domain, and why (the decision every fetch path uses)."""
    return ops.check_domain(trust.CheckDomainRequest(domain=domain))


@router.operation("calibration_metrics")
def calibration_metrics(ops: Ops, request: trust.CalibrationMetricsRequest) -> trust.CalibrationResponse:
    """get_stats | evaluate | get_evaluations | fit."""
    return ops.calibration_metrics(request)


@router.operation("calibration_rollback")
def calibration_rollback(ops: Ops, request: trust.CalibrationRollbackRequest) -> trust.CalibrationResponse:
    """Make a calibrator version active (0: none)."""
    return ops.calibration_rollback(request)
