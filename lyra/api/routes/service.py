"""The service's own routes, no operation of the catalogue: the health check and the evidence report page."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from lyra.api.params import TaskIdPath
from lyra.api.routing import Ops
from lyra.models import api

router = APIRouter()


@router.get("/healthz", tags=["service"], include_in_schema=False)
def healthz(ops: Ops) -> api.Health:
    return ops.health()


@router.get("/tasks/{task_id}/report", response_class=HTMLResponse, tags=["report"])
def report(ops: Ops, task_id: TaskIdPath) -> HTMLResponse:
    """The evidence report page of a task."""
    return HTMLResponse(ops.report_html(task_id))
