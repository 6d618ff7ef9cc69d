"""The service's own routes, no operation of the catalogue: the health check and the evidence report page."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from lyra.api.params import ChangesQuery, TaskIdPath
from lyra.api.routing import Ops, fields
from lyra.models import api, timeline

router = APIRouter()


@router.get("/healthz", tags=["service"], include_in_schema=False)
def healthz(ops: Ops) -> api.Health:
    return ops.health()


@router.get("/tasks/{task_id}/report", response_class=HTMLResponse, tags=["report"])
def report(ops: Ops, task_id: TaskIdPath, query: Annotated[ChangesQuery, Query()]) -> HTMLResponse:
    """The evidence report page of a task; its "What changed" section takes get_changes' query parameters (since,
    since_run, the thresholds; default: since the task's latest run)."""
    changes = timeline.GetChangesRequest(task_id=task_id, **fields(query))
    return HTMLResponse(ops.report_html(task_id, changes=changes))
