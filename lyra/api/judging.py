"""REST routes of the judges (issue 27): ``next_judgments``, ``submit_judgments``, ``review_queue``.

Method, path and status code come from the catalogue (:mod:`lyra.models.catalogue`); the bodies and the query are
the request models' own fields minus the path's ``task_id``, validated as strictly as the request models (and so as
MCP) by the app's :func:`~lyra.api.app.parameters_of`. A REST caller names itself with ``judge``
(``assistant:<client>/<model>``); a person's verdict goes through feedback (``human:<reviewer>``).
"""

# no `from __future__ import annotations`: FastAPI reads the endpoints' annotations, which name local models
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Path, Query

from lyra.core.ids import TASK_ID_PATTERN
from lyra.models import judging
from lyra.models.catalogue import OPERATION_BY_NAME
from lyra.services.operations import Operations

TaskIdPath = Annotated[str, Path(pattern=TASK_ID_PATTERN.pattern, description="a task id")]
TAG = "judging"
Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


def judging_router(ops: Operations, prefix: str) -> APIRouter:
    """The judging routes under ``prefix`` (``/api/v1``)."""
    from lyra.api.app import parameters_of  # the strict parameter models of every route (app imports this module)

    next_body = parameters_of(judging.NextJudgmentsRequest, without=("task_id",), name="NextJudgmentsBody")
    submit_body = parameters_of(judging.SubmitJudgmentsRequest, without=("task_id",), name="SubmitJudgmentsBody")
    review_query = parameters_of(judging.ReviewQueueRequest, without=("task_id",), name="ReviewQueueQuery", query=True)
    router = APIRouter(prefix=prefix, tags=[TAG])

    def route(name: str) -> Callable[[Endpoint], Endpoint]:
        rest = OPERATION_BY_NAME[name].rest
        if rest is None or rest.tag != TAG:
            raise ValueError(f"operation {name} has no {TAG} REST route in the catalogue")
        return router.api_route(rest.path, methods=[rest.method], status_code=rest.status_code)

    @route("next_judgments")
    def next_judgments(task_id: TaskIdPath, body: next_body) -> judging.NextJudgments:  # type: ignore[valid-type]
        """A batch of (claim, passage) pairs to judge, chosen by a policy, each with its ticket."""
        return ops.next_judgments(judging.NextJudgmentsRequest(task_id=task_id, **dict(body)))

    @route("submit_judgments")
    def submit_judgments(task_id: TaskIdPath, body: submit_body) -> judging.SubmitJudgmentsResponse:  # type: ignore[valid-type]
        """Verdicts on the tickets of next_judgments; the good items are written in one transaction."""
        fields: dict[str, Any] = dict(body)
        fields["items"] = [dict(item) for item in fields["items"]]
        return ops.submit_judgments(judging.SubmitJudgmentsRequest.model_validate({"task_id": task_id, **fields}))

    @route("review_queue")
    def review_queue(task_id: TaskIdPath, query: Annotated[review_query, Query()]) -> judging.ReviewQueue:  # type: ignore[valid-type]
        """The edges a person should review first; answered with feedback edge_correct."""
        return ops.review_queue(judging.ReviewQueueRequest(task_id=task_id, **dict(query)))

    return router
