"""The REST adapter: ``create_app(services)`` serves the operations under ``/api/v1``, MCP's streamable HTTP
endpoint at ``/mcp``, and the evidence report pages at ``/tasks/{task_id}/report`` — all in one ASGI app.

Thin by design: every route builds the operation's request model, calls the one service method and returns its
response model. Errors: Lyra's error tree and request validation both become JSON bodies
``{"error", "message", "field"?, "hint"?}`` with a 4xx status; an unexpected failure is a 500 without a traceback.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Annotated, Any, Literal

from fastapi import Body, Depends, FastAPI, Path, Query, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, Field, ValidationError

from lyra.bootstrap import Services
from lyra.core.errors import (
    ConflictError,
    GraphUnavailableError,
    InvalidInputError,
    LyraError,
    NotFoundError,
)
from lyra.core.ids import TASK_ID_PATTERN
from lyra.core.settings import Settings
from lyra.models import api, trust
from lyra.services.operations import Operations

log = logging.getLogger(__name__)
PREFIX = "/api/v1"
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]", "::1"]
STATUS_FOR_ERROR: dict[type[LyraError], int] = {
    InvalidInputError: status.HTTP_422_UNPROCESSABLE_CONTENT,
    NotFoundError: status.HTTP_404_NOT_FOUND,
    ConflictError: status.HTTP_409_CONFLICT,
    GraphUnavailableError: status.HTTP_503_SERVICE_UNAVAILABLE,
}
TaskIdPath = Annotated[str, Path(pattern=TASK_ID_PATTERN.pattern, description="a task id")]


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# ----------------------------------------------------------------------------- bodies with the task id in the path
class _Body(BaseModel):
    model_config = api.Request.model_config


class QueueTargetsBody(_Body):
    targets: list[api.Target] = Field(min_length=1, max_length=api.MAX_TARGETS)


class StopTaskBody(_Body):
    mode: Literal["graceful", "immediate"] = "graceful"
    cleanup: Literal["none", "soft", "hard_orphans_only"] = "none"


class ViewBody(_Body):
    params: dict[str, Any] = Field(default_factory=dict)


class FeedbackBody(_Body):
    action: trust.FeedbackAction
    args: dict[str, Any]


class TaskSummary(api.Response):
    id: str
    hypothesis: str
    status: str | None
    created_at: str | None
    claims: int


class TaskList(api.Response):
    tasks: list[TaskSummary]


# ----------------------------------------------------------------------------- errors
def _error(status_code: int, body: dict[str, Any]) -> JSONResponse:
    return JSONResponse(status_code=status_code, content=body)


def _field_from_loc(loc: tuple[Any, ...]) -> str:
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "body"


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(LyraError)
    async def lyra_error(_request: Request, exc: LyraError) -> JSONResponse:
        code = next((c for cls, c in STATUS_FOR_ERROR.items() if isinstance(exc, cls)), 500)
        if code >= 500:
            log.error("request failed: %s", exc.message)
        return _error(code, exc.to_dict())

    # FastAPI's request validation, and a request model built inside a route from path or query values
    @app.exception_handler(RequestValidationError)
    @app.exception_handler(ValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError | ValidationError) -> JSONResponse:
        first = exc.errors()[0]
        field = _field_from_loc(tuple(first.get("loc", ())))
        return _error(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            {"error": "invalid_input", "message": f"{field}: {first.get('msg', 'invalid')}", "field": field},
        )

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return _error(500, {"error": "internal_error", "message": f"unexpected {type(exc).__name__}; see the log"})


# ----------------------------------------------------------------------------- security
def _allowed_hosts(settings: Settings) -> list[str]:
    return sorted({*LOOPBACK_HOSTS, settings.api_host, *settings.api_allowed_hosts})


def _allowed_origins(settings: Settings) -> list[str]:
    loopback = [f"http://{h}" for h in LOOPBACK_HOSTS if h != "::1"]
    return [*loopback, *settings.api_allowed_origins]


def _origin_ok(origin: str, allowed: list[str]) -> bool:
    # an allowed origin, on any port
    return any(origin == entry or origin.startswith(entry + ":") for entry in allowed)


def _install_guards(app: FastAPI, settings: Settings) -> None:
    hosts = {h.lower() for h in _allowed_hosts(settings)}
    origins = _allowed_origins(settings)
    token = settings.api_token.get_secret_value() if settings.api_token else None
    max_body = settings.api_max_body_bytes

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        host = (request.headers.get("host") or "").lower()
        host_name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if "*" not in hosts and host_name not in hosts and host not in hosts:
            return _error(
                400,
                {
                    "error": "invalid_host",
                    "message": f"Host {host!r} is not allowed",
                    "hint": "add it to LYRA_API_ALLOWED_HOSTS",
                },
            )
        origin = request.headers.get("origin")
        if origin and not _origin_ok(origin, origins):
            return _error(
                403,
                {
                    "error": "invalid_origin",
                    "message": f"Origin {origin!r} is not allowed",
                    "hint": "add it to LYRA_API_ALLOWED_ORIGINS",
                },
            )
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > max_body:
            return _error(
                413, {"error": "too_large", "message": f"request body over {max_body} bytes", "field": "body"}
            )
        if token and request.url.path not in ("/healthz",):
            supplied = request.headers.get("authorization", "")
            if not hmac.compare_digest(supplied.encode(), f"Bearer {token}".encode()):
                return JSONResponse(
                    status_code=401,
                    content={"error": "unauthorized", "message": "missing or wrong bearer token"},
                    headers={"WWW-Authenticate": "Bearer"},
                )
        return await call_next(request)


# ----------------------------------------------------------------------------- routes
def _model_response(model: BaseModel) -> Response:
    """Large responses are serialised once, by pydantic's JSON encoder (the route still declares its model)."""
    return Response(content=model.model_dump_json(), media_type="application/json")


def _strict_query(*allowed: str) -> Callable[[Request], None]:
    """Unknown query parameters are rejected, like unknown body fields."""

    def check(request: Request) -> None:
        unknown = sorted(set(request.query_params) - set(allowed))
        if unknown:
            raise InvalidInputError(unknown[0], "unknown query parameter", hint=f"accepted: {', '.join(allowed)}")

    return check


def _install_routes(app: FastAPI, ops: Operations, services: Services) -> None:
    @app.get("/healthz", tags=["service"], include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok", "neo4j": services.store.ping()}

    @app.post(f"{PREFIX}/tasks", status_code=201, tags=["tasks"])
    def create_task(request: api.CreateTaskRequest) -> api.CreateTaskResponse:
        """Create a research task for a hypothesis (it becomes the first claim)."""
        return ops.create_task(request)

    @app.get(f"{PREFIX}/tasks", tags=["tasks"], dependencies=[Depends(_strict_query())])
    def list_tasks() -> TaskList:
        """All tasks, newest first."""
        return TaskList(tasks=[TaskSummary.model_validate(t) for t in ops.tasks.list_tasks()])

    @app.post(f"{PREFIX}/tasks/{{task_id}}/targets", status_code=202, tags=["tasks"])
    def queue_targets(task_id: TaskIdPath, body: QueueTargetsBody) -> api.QueueTargetsResponse:
        """Queue targets (file | query | url | doi) as background jobs; duplicates are skipped."""
        return ops.queue_targets(api.QueueTargetsRequest(task_id=task_id, targets=body.targets))

    @app.get(
        f"{PREFIX}/tasks/{{task_id}}/status", tags=["tasks"], dependencies=[Depends(_strict_query("wait", "detail"))]
    )
    def get_status(
        task_id: TaskIdPath,
        wait: Annotated[float, Query(ge=0, le=300, description="long-poll seconds")] = 0,
        detail: Annotated[Literal["summary", "full"], Query()] = "summary",
    ) -> api.TaskStatus:
        """Jobs, metrics, budget, milestones, blocked domains; long-polls up to `wait` seconds."""
        return ops.get_status(api.GetStatusRequest(task_id=task_id, wait=wait, detail=detail))

    @app.post(f"{PREFIX}/tasks/{{task_id}}/stop", tags=["tasks"])
    def stop_task(task_id: TaskIdPath, body: Annotated[StopTaskBody | None, Body()] = None) -> api.StopTaskResponse:
        """Stop the task's jobs (graceful | immediate), optionally cleaning up (soft | hard_orphans_only)."""
        b = body or StopTaskBody()
        return ops.stop_task(api.StopTaskRequest(task_id=task_id, mode=b.mode, cleanup=b.cleanup))

    @app.get(
        f"{PREFIX}/tasks/{{task_id}}/materials",
        response_model=api.Materials,
        tags=["evidence"],
        dependencies=[Depends(_strict_query("evidence_limit", "include_neutral", "include_not_adopted"))],
    )
    def get_materials(
        task_id: TaskIdPath,
        evidence_limit: Annotated[int, Query(ge=0, le=1000)] = 10,
        include_neutral: bool = True,
        include_not_adopted: bool = True,
    ) -> Response:
        """Claims with confidence, uncertainty, controversy and their evidence, computed now from the edges."""
        options = api.MaterialsOptions(
            evidence_limit=evidence_limit, include_neutral=include_neutral, include_not_adopted=include_not_adopted
        )
        return _model_response(ops.get_materials(api.GetMaterialsRequest(task_id=task_id, options=options)))

    @app.get(
        f"{PREFIX}/tasks/{{task_id}}/graph",
        response_model=api.EvidenceGraph,
        tags=["evidence"],
        dependencies=[Depends(_strict_query("limit"))],
    )
    def get_evidence_graph(task_id: TaskIdPath, limit: Annotated[int, Query(ge=1, le=20_000)] = 2000) -> Response:
        """The task's evidence subgraph, with a Cypher query and a Neo4j Browser link for it."""
        return _model_response(ops.get_evidence_graph(api.GetEvidenceGraphRequest(task_id=task_id, limit=limit)))

    @app.get(f"{PREFIX}/views", tags=["explore"], dependencies=[Depends(_strict_query())])
    def list_views() -> api.ViewList:
        """The named read-only Cypher views."""
        return ops.list_views()

    @app.post(f"{PREFIX}/views/{{name}}", tags=["explore"])
    def query_view(
        name: Annotated[str, Path(pattern=r"^[a-z][a-z0-9_]{0,63}$")], body: Annotated[ViewBody | None, Body()] = None
    ) -> api.QueryResult:
        """Run a named view with its parameters."""
        return ops.query_view(api.QueryViewRequest(name=name, params=(body or ViewBody()).params))

    @app.post(f"{PREFIX}/graph/query", tags=["explore"])
    def query_graph(request: api.QueryGraphRequest) -> api.QueryResult:
        """Read-only Cypher (refused unless EXPLAIN says read-only), with a timeout and a row limit."""
        return ops.query_graph(request)

    @app.post(f"{PREFIX}/search", tags=["explore"])
    def vector_search(request: api.VectorSearchRequest) -> api.SearchResults:
        """Fragments and/or claims most similar to a text."""
        return ops.vector_search(request)

    @app.post(f"{PREFIX}/tasks/{{task_id}}/feedback", tags=["trust"])
    def feedback(task_id: TaskIdPath, body: FeedbackBody) -> trust.FeedbackResponse:
        """A human correction: domain_block | domain_unblock | domain_clear_override | claim_reject |
        claim_restore | edge_correct, with its args."""
        return ops.feedback(trust.FeedbackRequest(task_id=task_id, action=body.action, args=body.args))

    @app.get(f"{PREFIX}/domains/{{domain}}", tags=["trust"], dependencies=[Depends(_strict_query())])
    def check_domain(domain: Annotated[str, Path(min_length=1, max_length=253)]) -> trust.DomainDecision:
        """May Lyra fetch / use this domain, and why (the decision every fetch path uses)."""
        return ops.check_domain(trust.CheckDomainRequest(domain=domain))

    @app.post(f"{PREFIX}/calibration", tags=["trust"])
    def calibration_metrics(request: trust.CalibrationMetricsRequest) -> trust.CalibrationResponse:
        """get_stats | evaluate | get_evaluations | fit."""
        return ops.calibration_metrics(request)

    @app.post(f"{PREFIX}/calibration/rollback", tags=["trust"])
    def calibration_rollback(request: trust.CalibrationRollbackRequest) -> trust.CalibrationResponse:
        """Make a calibrator version active (0: none)."""
        return ops.calibration_rollback(request)

    @app.get("/tasks/{task_id}/report", response_class=HTMLResponse, tags=["report"])
    def report(task_id: TaskIdPath) -> HTMLResponse:
        """The evidence report page of a task."""
        return HTMLResponse(ops.report_html(task_id))


def create_app(services: Services, *, workers: bool = True, mcp: bool = True) -> FastAPI:
    """The HTTP app. ``workers`` runs the job worker pool while the app runs; ``mcp`` mounts MCP at ``/mcp``."""
    settings = services.settings
    ops = services.operations
    mcp_server = None
    mcp_routes: list[Any] = []
    if mcp:
        from lyra.mcp.server import create_mcp_server

        mcp_server = create_mcp_server(ops)
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"{h}:*" for h in _allowed_hosts(settings)] + _allowed_hosts(settings),
            allowed_origins=[f"{o}:*" for o in _allowed_origins(settings)] + _allowed_origins(settings),
        )
        mcp_app = mcp_server.streamable_http_app(
            streamable_http_path="/mcp", transport_security=security, host=settings.api_host, stateless_http=False
        )
        mcp_routes = list(mcp_app.routes)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        pool = services.worker_pool() if workers else None
        async with AsyncExitStack() as stack:
            if mcp_server is not None:
                await stack.enter_async_context(mcp_server.session_manager.run())
            if pool is not None:
                pool.start()
                stack.callback(pool.stop)
            yield

    app = FastAPI(
        title="Lyra",
        version="0.1.0",
        summary="Evidence graph for AI-assisted research: claims, evidence and Bayesian confidence over Neo4j.",
        lifespan=lifespan,
    )
    _install_error_handlers(app)
    _install_guards(app, settings)
    _install_routes(app, ops, services)
    app.router.routes.extend(mcp_routes)
    return app


__all__ = ["create_app", "is_loopback"]
