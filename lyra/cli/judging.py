"""`lyra judge next|submit|review`: the judges' pull door and the review queue from the command line (the MCP tools
next_judgments, submit_judgments and review_queue). A script or a person driving a model names the judge with
``--judge assistant:<client>/<model>``; a person's own verdict is `lyra feedback TASK edge_correct`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from lyra.cli.common import handle_errors, operations
from lyra.models.validation import parse_one

# the request models (lyra.models.judging) are imported in each command: `lyra --help` does not build them

judge_app = typer.Typer(help="Judges: take evidence to judge, submit verdicts, see what a person should review.")
JudgeOption = typer.Option(None, "--judge", help="who judges: assistant:<client>/<model> (default assistant:unknown)")


@judge_app.command("next")
@handle_errors
def next_judgments(
    task_id: str,
    limit: int = typer.Option(10, help="how many pairs (1 to 50)"),
    policy: str = typer.Option("uncertain", help="uncertain | impact | unjudged | disputed"),
    judge: str | None = JudgeOption,
) -> None:
    """Print a batch of (claim, passage) pairs to judge as JSON, each with the ticket `lyra judge submit` echoes."""
    from lyra.models.judging import NextJudgmentsRequest

    request = parse_one(NextJudgmentsRequest, {"task_id": task_id, "limit": limit, "policy": policy, "judge": judge})
    with operations() as ops:
        print(ops.next_judgments(request).model_dump_json(indent=2))


@judge_app.command("submit")
@handle_errors
def submit_judgments(
    task_id: str,
    file: Path = typer.Argument(..., help='a JSON file: a list of {"ticket", "relation", "confidence", "rationale"}'),
    judge: str | None = JudgeOption,
) -> None:
    """Submit verdicts (a JSON list of items) on the tickets of `lyra judge next`; prints what was written, the
    per-item errors and how each claim's confidence moved."""
    from lyra.models.judging import SubmitJudgmentsRequest

    try:
        items = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(f"{file}: {exc}") from None
    if isinstance(items, dict) and "items" in items:  # the request's shape is accepted too
        items = items["items"]
    request = parse_one(SubmitJudgmentsRequest, {"task_id": task_id, "items": items, "judge": judge})
    with operations() as ops:
        print(ops.submit_judgments(request).model_dump_json(indent=2))


@judge_app.command("review")
@handle_errors
def review_queue(task_id: str, limit: int = typer.Option(20, help="how many edges (1 to 200)")) -> None:
    """The edges a person should review first (answer with `lyra feedback TASK edge_correct --arg edge_id=...`)."""
    from lyra.models.judging import ReviewQueueRequest

    request = parse_one(ReviewQueueRequest, {"task_id": task_id, "limit": limit})
    with operations() as ops:
        print(ops.review_queue(request).model_dump_json(indent=2))
