"""Tasks: create and list them, add claims, queue their sources, follow their jobs, the pages waiting for a person,
stop them."""

from __future__ import annotations

from typing import Annotated

from fastapi import Body, Query

from lyra.api.params import AuthQueueQuery, InterventionIdPath, NoQuery, StatusQuery, TaskIdPath
from lyra.api.routing import FeatureRouter, Ops, fields
from lyra.models import api, refresh, webhooks

router = FeatureRouter("tasks")


@router.operation("create_task")
def create_task(ops: Ops, request: api.CreateTaskRequest) -> api.CreateTaskResponse:
    """Create a research task for a hypothesis (it becomes the first claim; a question only names the task and
    needs config.claims)."""
    return ops.create_task(request)


@router.operation("list_tasks")
def list_tasks(ops: Ops, _query: Annotated[NoQuery, Query()]) -> api.TaskList:
    """All tasks, newest first."""
    return ops.list_tasks()


@router.operation("add_claims")
def add_claims(ops: Ops, task_id: TaskIdPath, body: api.AddClaimsBody) -> api.AddClaimsResponse:
    """Add claims to a task; one it already holds (same text, ignoring case, spacing and trailing punctuation)
    comes back with created=false."""
    return ops.add_claims(api.AddClaimsRequest(task_id=task_id, **fields(body)))


@router.operation("queue_targets")
def queue_targets(ops: Ops, task_id: TaskIdPath, body: api.QueueTargetsBody) -> api.QueueTargetsResponse:
    """Queue targets (file | query | url | doi) as background jobs; duplicates are skipped."""
    return ops.queue_targets(api.QueueTargetsRequest(task_id=task_id, **fields(body)))


@router.operation("queue_reference_candidates")
def queue_reference_candidates(
    ops: Ops, task_id: TaskIdPath, body: api.ReferenceCandidatesBody
) -> api.QueueReferenceCandidatesResponse:
    """Queue cited papers the task has not read yet (the reference_candidates view), most-cited first."""
    return ops.queue_reference_candidates(api.QueueReferenceCandidatesRequest(task_id=task_id, **fields(body)))


@router.operation("get_status")
def get_status(ops: Ops, task_id: TaskIdPath, query: Annotated[StatusQuery, Query()]) -> api.TaskStatus:
    """Jobs, metrics, budget, milestones, blocked domains; long-polls up to `wait` seconds."""
    return ops.get_status(api.GetStatusRequest(task_id=task_id, **fields(query)))


@router.operation("get_auth_queue")
def get_auth_queue(ops: Ops, task_id: TaskIdPath, query: Annotated[AuthQueueQuery, Query()]) -> api.AuthQueue:
    """Pages the task's jobs could not read (CAPTCHA / login / consent walls), waiting for a person."""
    return ops.get_auth_queue(api.GetAuthQueueRequest(task_id=task_id, **fields(query)))


@router.operation("resolve_auth")
def resolve_auth(
    ops: Ops, task_id: TaskIdPath, intervention_id: InterventionIdPath, body: api.ResolveAuthBody
) -> api.ResolveAuthResponse:
    """retry | skip | cookie (the Cookie header value a person's browser sends to the site; kept secret)."""
    return ops.resolve_auth(api.ResolveAuthRequest(task_id=task_id, intervention_id=intervention_id, **fields(body)))


@router.operation("refresh_task")
def refresh_task(
    ops: Ops, task_id: TaskIdPath, body: Annotated[refresh.RefreshBody | None, Body()] = None
) -> refresh.RefreshResult:
    """Refresh the task: retraction states of its DOI pages read fresh and applied; its known web pages asked
    whether they changed (conditional GET), the changed ones queued; its other earlier targets queued again within
    a budget."""
    return ops.refresh_task(refresh.RefreshRequest(task_id=task_id, **fields(body)))


@router.operation("set_task_webhook")
def set_task_webhook(ops: Ops, task_id: TaskIdPath, body: webhooks.SetWebhookBody) -> webhooks.WebhookSetting:
    """Set (or, with url null, remove) the URL Lyra POSTs a signed note to after each run that moved the task's
    claims."""
    return ops.set_task_webhook(webhooks.SetWebhookRequest(task_id=task_id, **fields(body)))


@router.operation("stop_task")
def stop_task(
    ops: Ops, task_id: TaskIdPath, body: Annotated[api.StopTaskBody | None, Body()] = None
) -> api.StopTaskResponse:
    """Stop the task's jobs (graceful | immediate), optionally cleaning up (soft | hard_orphans_only)."""
    return ops.stop_task(api.StopTaskRequest(task_id=task_id, **fields(body)))
