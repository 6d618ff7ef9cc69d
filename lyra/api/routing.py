"""What every router of :mod:`lyra.api.routes` shares: :class:`FeatureRouter`, which puts an endpoint at the method,
path and status code the catalogue (:mod:`lyra.models.catalogue`) declares for its operation, and the endpoints'
dependencies: the :class:`~lyra.services.operations.Operations` the app serves (:data:`Ops`) and the reviewer a
bearer token stands for (:data:`TokenReviewer`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import Response
from pydantic import BaseModel

from lyra.core.context import current_door
from lyra.models.catalogue import OPERATION_BY_NAME
from lyra.services.operations import Operations

PREFIX = "/api/v1"
Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


class FeatureRouter(APIRouter):
    """The routes of one feature: the operations whose catalogue entry names ``tag``, under ``/api/v1``."""

    def __init__(self, tag: str) -> None:
        super().__init__(prefix=PREFIX, tags=[tag])
        self.tag = tag

    def operation(self, name: str) -> Callable[[Endpoint], Endpoint]:
        """The decorator that serves ``name`` with the catalogue's method, path, status code and response model."""
        operation = OPERATION_BY_NAME[name]
        rest = operation.rest
        if rest is None:
            raise ValueError(f"operation {name} has no REST route in the catalogue")
        if rest.tag != self.tag:
            raise ValueError(f"operation {name} belongs on the {rest.tag} router, not {self.tag}")
        return self.api_route(
            rest.path, methods=[rest.method], status_code=rest.status_code, response_model=operation.response
        )


def serve(app: FastAPI, ops: Operations, token: str | None) -> None:
    """Hand the endpoints of ``app`` the operations they call and the bearer token's reviewer."""
    app.state.operations = ops
    app.state.token_reviewer = "rest-token:" + hashlib.sha256(token.encode()).hexdigest()[:12] if token else None


async def _operations(request: Request) -> Operations:
    # the request's own context (its endpoint runs in a copy of it): the records the call writes name the door
    current_door.set("rest")
    ops: Operations = request.app.state.operations
    return ops


async def _token_reviewer(request: Request) -> str | None:
    reviewer: str | None = request.app.state.token_reviewer
    return reviewer


Ops = Annotated[Operations, Depends(_operations)]
# the reviewer of a call that names none: one derived from the bearer token (a short hash, never the token), if any
TokenReviewer = Annotated[str | None, Depends(_token_reviewer)]


def with_reviewer(fields: dict[str, Any], reviewer: str | None) -> dict[str, Any]:
    """The fields with ``reviewer_id`` defaulted to the token's reviewer (else left out: anonymous)."""
    if fields.get("reviewer_id") or not reviewer:
        return fields
    return {**fields, "reviewer_id": reviewer}


def fields(params: BaseModel | None) -> dict[str, Any]:
    """The fields a body or query model holds, as given or defaulted (not re-serialised), to build the request."""
    return {} if params is None else dict(params)


def model_response(model: BaseModel) -> Response:
    """Large responses are serialised once, by pydantic's JSON encoder (the route still declares its model)."""
    return Response(content=model.model_dump_json(), media_type="application/json")


__all__ = ["PREFIX", "FeatureRouter", "Ops", "TokenReviewer", "fields", "model_response", "serve", "with_reviewer"]
