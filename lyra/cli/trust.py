"""Trust and control: `lyra feedback`, `lyra check-domain`, `lyra calibration` (the MCP tools of the same names)."""

from __future__ import annotations

import typer

from lyra.cli.common import handle_errors, operations, parse_params
from lyra.models.validation import parse_one

# the request models (lyra.models.trust) are imported in each command: `lyra --help` does not build them


@handle_errors
def feedback(
    task_id: str,
    action: str = typer.Argument(
        ...,
        help="domain_block | domain_unblock | domain_clear_override | page_unblock | claim_reject | claim_restore | "
        "edge_correct",
    ),
    arg: list[str] = typer.Option(
        [], "--arg", help="name=value, e.g. --arg domain_pattern=*.example.org or --arg url=https://example.org/page"
    ),
    reviewer: str | None = typer.Option(None, "--reviewer", help="who reviews (default: anonymous)"),
    tag: list[str] = typer.Option([], "--tag", help="a label for the learning loop (repeatable)"),
) -> None:
    """Record a human correction (the MCP `feedback` tool); prints what changed and the feedback record kept."""
    from lyra.models.trust import FeedbackRequest

    request = parse_one(
        FeedbackRequest,
        {"task_id": task_id, "action": action, "args": parse_params(arg), "reviewer_id": reviewer, "tags": tag},
    )
    with operations() as ops:
        print(ops.feedback(request).model_dump_json(indent=2))


@handle_errors
def check_domain(domain: str) -> None:
    """May Lyra fetch / use DOMAIN, and why (the decision every fetch path uses)."""
    from lyra.models.trust import CheckDomainRequest

    request = parse_one(CheckDomainRequest, {"domain": domain})
    with operations() as ops:
        print(ops.check_domain(request).model_dump_json(indent=2))


@handle_errors
def calibration(
    action: str = typer.Argument("get_stats", help="get_stats | evaluate | get_evaluations | fit | rollback"),
    method: str = typer.Option("platt", help="fit: platt or temperature"),
    activate: bool = typer.Option(False, help="fit: apply the new calibrator to new edges"),
    version: int = typer.Option(0, help="rollback: the version to make active (0: none)"),
) -> None:
    """NLI calibration from human review (the MCP calibration_metrics / calibration_rollback tools)."""
    from lyra.models.trust import CalibrationMetricsRequest, CalibrationResponse, CalibrationRollbackRequest

    with operations() as ops:
        result: CalibrationResponse
        if action == "rollback":
            result = ops.calibration_rollback(parse_one(CalibrationRollbackRequest, {"version": version}))
        else:
            request = parse_one(CalibrationMetricsRequest, {"action": action, "method": method, "activate": activate})
            result = ops.calibration_metrics(request)
        print(result.model_dump_json(indent=2))
