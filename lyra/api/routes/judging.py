"""Judging: the assistant's pull door (next_judgments, submit_judgments) and the reviewer's queue.

A REST caller names itself with ``judge`` (``assistant:<client>/<model>``); a person's verdict goes through feedback
``edge_correct`` (``human:<reviewer>``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Body, Query

from lyra.api.params import ReviewQueueQuery, TaskIdPath
from lyra.api.routing import FeatureRouter, Ops, fields
from lyra.models import judging

router = FeatureRouter("judging")


@router.operation("next_judgments")
def next_judgments(
    ops: Ops, task_id: TaskIdPath, body: Annotated[judging.NextJudgmentsBody | None, Body()] = None
) -> judging.NextJudgments:
    """A batch of (claim, passage) pairs to judge, chosen by a policy, each with its ticket."""
    return ops.next_judgments(judging.NextJudgmentsRequest(task_id=task_id, **fields(body)))


@router.operation("submit_judgments")
def submit_judgments(
    ops: Ops, task_id: TaskIdPath, body: judging.SubmitJudgmentsBody
) -> judging.SubmitJudgmentsResponse:
    """Verdicts on the tickets of next_judgments; the good items are written in one transaction."""
    return ops.submit_judgments(judging.SubmitJudgmentsRequest(task_id=task_id, items=body.items, judge=body.judge))


@router.operation("review_queue")
def review_queue(ops: Ops, task_id: TaskIdPath, query: Annotated[ReviewQueueQuery, Query()]) -> judging.ReviewQueue:
    """The edges a person should review first; answered with feedback edge_correct."""
    return ops.review_queue(judging.ReviewQueueRequest(task_id=task_id, **fields(query)))
