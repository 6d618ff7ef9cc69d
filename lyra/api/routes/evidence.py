"""Evidence: judge a task's pending pairs, its claims with confidence and evidence, its evidence subgraph."""

from __future__ import annotations

from typing import Annotated

from fastapi import Body, Query, Request
from fastapi.responses import Response, StreamingResponse

from lyra.api.params import (
    ChangesQuery,
    ClaimIdPath,
    ExportQuery,
    GraphQuery,
    MaterialsQuery,
    TaskIdPath,
    TimelineQuery,
)
from lyra.api.routing import FeatureRouter, Ops, fields, model_response
from lyra.models import api, export, timeline

router = FeatureRouter("evidence")
# claims per page when REST streams a whole task (each page is read, written and dropped before the next)
REST_STREAM_PAGE = 500


@router.operation("judge_remaining")
def judge_remaining(
    ops: Ops, task_id: TaskIdPath, body: Annotated[api.JudgeRemainingBody | None, Body()] = None
) -> api.JudgeRemainingResponse:
    """Judge the task's pending candidate pairs now (best first, at most max_pairs, within the pair budget)."""
    return ops.judge_remaining(api.JudgeRemainingRequest(task_id=task_id, **fields(body)))


@router.operation("get_materials")
def get_materials(ops: Ops, task_id: TaskIdPath, query: Annotated[MaterialsQuery, Query()]) -> Response:
    """Claims with confidence, uncertainty, controversy and their evidence, computed now from the edges."""
    if query.limit is not None:
        request = api.GetMaterialsRequest(
            task_id=task_id, options=query.options(), limit=query.limit, cursor=query.cursor
        )
        return model_response(ops.get_materials(request))
    request = api.GetMaterialsRequest(
        task_id=task_id, options=query.options(), limit=REST_STREAM_PAGE, cursor=query.cursor
    )
    return StreamingResponse(ops.get_materials_json(request), media_type="application/json")


@router.operation("get_changes")
def get_changes(ops: Ops, task_id: TaskIdPath, query: Annotated[ChangesQuery, Query()]) -> timeline.Changes:
    """What moved each claim since a run or a moment (default: the latest run), and why."""
    return ops.get_changes(timeline.GetChangesRequest(task_id=task_id, **fields(query)))


@router.operation("get_claim_timeline")
def get_claim_timeline(
    ops: Ops, task_id: TaskIdPath, claim_id: ClaimIdPath, query: Annotated[TimelineQuery, Query()]
) -> timeline.ClaimTimeline:
    """Everything that happened to one claim, newest first."""
    return ops.get_claim_timeline(timeline.GetClaimTimelineRequest(task_id=task_id, claim_id=claim_id, **fields(query)))


@router.operation("export_evidence")
def export_evidence(
    ops: Ops,
    task_id: TaskIdPath,
    query: Annotated[ExportQuery, Query()],
    request: Request,
) -> Response:
    """The task's evidence as a file (CSV, CSL-JSON, BibTeX, RIS or Markdown) with its media type and a file name
    to save it under; with ``Accept: application/json`` the export_evidence object instead (the file as text)."""
    result = ops.export_evidence(export.ExportRequest(task_id=task_id, **fields(query)))
    if "application/json" in request.headers.get("accept", ""):
        return model_response(result)
    return Response(
        content=result.content.encode("utf-8"),
        media_type=result.media_type,
        headers={"Content-Disposition": f'attachment; filename="{result.filename}"'},
    )


@router.operation("get_evidence_graph")
def get_evidence_graph(ops: Ops, task_id: TaskIdPath, query: Annotated[GraphQuery, Query()]) -> Response:
    """The task's evidence subgraph, with a Cypher query and a Neo4j Browser link for it."""
    return model_response(ops.get_evidence_graph(api.GetEvidenceGraphRequest(task_id=task_id, **fields(query))))
