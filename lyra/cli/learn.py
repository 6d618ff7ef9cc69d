"""`lyra learn ...`: the learning loop from the command line (the MCP tools and REST routes of the same names).

Every command that reviews takes ``--reviewer`` (default: anonymous); proposals take effect only after two distinct
reviewers approved them (or one with ``--override-reason``).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from lyra.cli.common import err, handle_errors, open_services, operations
from lyra.models.validation import parse_one

if TYPE_CHECKING:
    from lyra.bootstrap import Services
    from lyra.models.api import JobInfo

# the request models (lyra.models.learning) are imported in each command: `lyra --help` does not build them

learn_app = typer.Typer(help="Learning from reviewers: feedback records, proposals, their review, learned rules.")
ReviewerOption = typer.Option(None, "--reviewer", help="who reviews (default: anonymous)")


@learn_app.command("feedback")
@handle_errors
def feedback_records(
    record_id: str | None = typer.Argument(None, help="one record (fbr_...); none: the component's newest"),
    component: str = typer.Option("stance", help="stance | claims | domain_policy | ..."),
    limit: int = typer.Option(20, min=1, max=1000),
    similar: bool = typer.Option(False, "--similar", help="records similar to RECORD_ID instead"),
    threshold: float = typer.Option(0.8, min=0.0, max=1.0, help="--similar: the least cosine similarity"),
) -> None:
    """Feedback records: one by id, records similar to it, or a component's newest."""
    from lyra.models.learning import FeedbackForComponentRequest, FindSimilarRequest, GetFeedbackRequest

    with operations() as ops:
        if record_id and similar:
            request = parse_one(FindSimilarRequest, {"id": record_id, "threshold": threshold, "limit": limit})
            print(ops.find_similar_feedback(request).model_dump_json(indent=2))
        elif record_id:
            print(ops.get_feedback(parse_one(GetFeedbackRequest, {"id": record_id})).model_dump_json(indent=2))
        else:
            request_list = parse_one(FeedbackForComponentRequest, {"component": component, "limit": limit})
            print(ops.get_feedback_for_component(request_list).model_dump_json(indent=2))


def wait_for_job(services: Services, job_id: str, timeout: float, poll: float = 1.0) -> JobInfo:
    """Run queued jobs in this process's workers until job ``job_id`` has ended (or ``timeout`` seconds); each new
    progress report goes to stderr. Returns the job as it is then."""
    from lyra.models.api import GetJobRequest

    ops = services.operations
    deadline = time.monotonic() + timeout
    shown: dict[str, object] | None = None
    with services.running_workers():
        while True:
            job = ops.get_job(GetJobRequest(id=job_id))
            if job.progress is not None and job.progress != shown:
                shown = job.progress
                err.print(escape(json.dumps(job.progress, ensure_ascii=False)), highlight=False, soft_wrap=True)
            if job.state not in ("queued", "running"):
                return job
            if time.monotonic() > deadline:
                err.print(f"[yellow]stopped waiting after {timeout:.0f} s; job {job_id} stays for `lyra serve`[/]")
                return job
            time.sleep(poll)


@learn_app.command("propose")
@handle_errors
def propose(
    no_measure: bool = typer.Option(False, "--no-measure", help="do not measure the predicted effects (fast)"),
    wait: bool = typer.Option(
        True, "--wait/--no-wait", help="run the batch here, progress on stderr (--no-wait: queue it and print the job)"
    ),
    timeout: float = typer.Option(3600.0, min=1.0, help="--wait: give up waiting after this many seconds"),
) -> None:
    """A batch of proposals from the corrections not used yet, each with its measured predicted effect. It is a job
    (the REST route and the MCP tool queue the same): this command runs it and prints the job with the ids of the
    proposals it created (`lyra learn proposals ID` shows one)."""
    from lyra.models.learning import GenerateProposalsRequest

    request = parse_one(GenerateProposalsRequest, {"measure": not no_measure})
    with open_services() as services:
        queued = services.operations.queue_proposals(request)
        if queued.already_queued:
            err.print(f"a batch is already {queued.state}: job {queued.job_id}")
        if not wait:
            print(queued.model_dump_json(indent=2))
            return
        job = wait_for_job(services, queued.job_id, timeout)
        print(job.model_dump_json(indent=2))
        if job.state == "failed":
            raise typer.Exit(1)


@learn_app.command("job")
@handle_errors
def job(job_id: str = typer.Argument(..., help="a job id (job_...), e.g. of `lyra learn propose --no-wait`")) -> None:
    """One job: its state, its progress while it runs, its result or error once it has ended."""
    from lyra.models.api import GetJobRequest

    with operations() as ops:
        print(ops.get_job(parse_one(GetJobRequest, {"id": job_id})).model_dump_json(indent=2))


@learn_app.command("proposals")
@handle_errors
def proposals(
    proposal_id: str | None = typer.Argument(None, help="one proposal (prp_...); none: the list"),
    status: str | None = typer.Option(None, help="pending | approved | rejected"),
    component: str | None = typer.Option(None),
    limit: int = typer.Option(50, min=1, max=500),
) -> None:
    """Proposals (newest first), or one with its evidence, predicted effect, conflicts and reviews."""
    from lyra.models.learning import GetProposalRequest, ListProposalsRequest

    with operations() as ops:
        if proposal_id:
            print(ops.get_proposal(parse_one(GetProposalRequest, {"id": proposal_id})).model_dump_json(indent=2))
            return
        request = parse_one(ListProposalsRequest, {"status": status, "component": component, "limit": limit})
        print(ops.list_proposals(request).model_dump_json(indent=2))


@learn_app.command("approve")
@handle_errors
def approve(
    proposal_id: str,
    reviewer: str | None = ReviewerOption,
    override_reason: str | None = typer.Option(None, "--override-reason", help="approve alone; logged"),
) -> None:
    """Approve a proposal (it takes effect with the second distinct reviewer, or with --override-reason)."""
    from lyra.models.learning import ApproveProposalRequest

    request = parse_one(
        ApproveProposalRequest, {"id": proposal_id, "reviewer_id": reviewer, "override_reason": override_reason}
    )
    with operations() as ops:
        print(ops.approve_proposal(request).model_dump_json(indent=2))


@learn_app.command("reject")
@handle_errors
def reject(
    proposal_id: str,
    reason: str = typer.Option(..., "--reason", help="why (required)"),
    reviewer: str | None = ReviewerOption,
) -> None:
    """Reject a pending proposal."""
    from lyra.models.learning import RejectProposalRequest

    request = parse_one(RejectProposalRequest, {"id": proposal_id, "reason": reason, "reviewer_id": reviewer})
    with operations() as ops:
        print(ops.reject_proposal(request).model_dump_json(indent=2))


@learn_app.command("rules")
@handle_errors
def rules(
    component: str | None = typer.Option(None),
    include_retired: bool = typer.Option(False, "--all", help="retired rules too"),
) -> None:
    """The learned rules in force, their predicted and observed effect, each component's rule-set version."""
    from lyra.models.learning import ListRulesRequest

    request = parse_one(ListRulesRequest, {"component": component, "include_retired": include_retired})
    with operations() as ops:
        print(ops.list_rules(request).model_dump_json(indent=2))


@learn_app.command("retire")
@handle_errors
def retire(
    rule_id: str,
    reason: str = typer.Option(..., "--reason", help="why (required)"),
    reviewer: str | None = ReviewerOption,
) -> None:
    """Retire an active learned rule (a new rule-set version without it)."""
    from lyra.models.learning import RetireRuleRequest

    request = parse_one(RetireRuleRequest, {"id": rule_id, "reason": reason, "reviewer_id": reviewer})
    with operations() as ops:
        print(ops.retire_rule(request).model_dump_json(indent=2))


@learn_app.command("rollback")
@handle_errors
def rollback(
    component: str,
    version: int = typer.Argument(..., help="the rule-set version to restore (0: no rules)"),
    reason: str = typer.Option(..., "--reason", help="why (required)"),
    reviewer: str | None = ReviewerOption,
) -> None:
    """Restore an earlier rule-set version of COMPONENT as a new version."""
    from lyra.models.learning import RollbackRulesRequest

    request = parse_one(
        RollbackRulesRequest, {"component": component, "version": version, "reason": reason, "reviewer_id": reviewer}
    )
    with operations() as ops:
        print(ops.rollback_rules(request).model_dump_json(indent=2))


@learn_app.command("propose-rule")
@handle_errors
def propose_rule(
    component: str = typer.Argument(
        ..., help="stance_llm | claim_extraction | citation_usefulness | citation_detection"
    ),
    content: str = typer.Argument(..., help="the guideline sentence"),
    reason: str = typer.Option(..., "--reason", help="why (required)"),
    evidence: list[str] = typer.Option([], "--evidence", help="a feedback record id it rests on (repeatable)"),
    reviewer: str | None = ReviewerOption,
    no_measure: bool = typer.Option(False, "--no-measure", help="stance_llm: do not measure (fast)"),
) -> None:
    """Write a guideline for a component as a proposal; it takes effect after two distinct approvals."""
    from lyra.models.learning import ProposeRuleRequest

    request = parse_one(
        ProposeRuleRequest,
        {
            "component": component,
            "content": content,
            "reason": reason,
            "evidence_ids": evidence,
            "reviewer_id": reviewer,
            "measure": not no_measure,
        },
    )
    with operations() as ops:
        print(ops.propose_rule(request).model_dump_json(indent=2))
