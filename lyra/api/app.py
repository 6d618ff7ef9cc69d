"""The REST adapter: ``create_app(ops, settings, mcp_server=...)`` serves the operations under ``/api/v1``, the
given MCP server's streamable HTTP endpoint at ``/mcp``, and the evidence report pages at ``/tasks/{task_id}/report``
— all in one ASGI app. The composition root (``lyra.bootstrap.build_http_app``) builds the MCP server and hands it
in; this module imports no other adapter and nothing below :class:`~lyra.services.operations.Operations`.

Routes sit on one router per feature; each operation's method, path and status code come from the catalogue
(:mod:`lyra.models.catalogue`), which ``tests/unit/architecture/test_catalogue.py`` checks the route table against.
Thin by design: every route builds the operation's request model, calls the one operation and returns its response
model. Query and body parameters are generated from the request models (same types, limits, defaults and
descriptions), so the two doors cannot drift. Errors: Lyra's error tree (``STATUS_FOR_ERROR``, one status per class),
request validation, a body that is not JSON, an unknown route or method become JSON bodies
``{"error", "message", "field"?, "hint"?}``; an unexpected failure is a 500 without a traceback.

Guards, outermost first: :class:`~lyra.api.guards.SingleHeaders` (one Host, Authorization and Origin header),
:class:`BodyLimit` (the bytes actually received, for every route and ``/mcp``), the Host and Origin checks (DNS
rebinding; browsers only from the server's own origin or ``LYRA_API_ALLOWED_ORIGINS``), Starlette's CORS
middleware for those configured origins (so a preflight is answered before the token check), the bearer token,
and :class:`~lyra.api.guards.McpMessages` (JSON-RPC ids, the answer at the MCP session cap).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager
from types import UnionType
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from fastapi import APIRouter, Body, FastAPI, Path, Query, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, BeforeValidator, Field, ValidationError, create_model
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lyra.api.guards import McpMessages, SingleHeaders
from lyra.core import errors
from lyra.core.errors import LyraError
from lyra.core.ids import TASK_ID_PATTERN
from lyra.core.settings import Settings
from lyra.models import api, learning, trust
from lyra.models.catalogue import OPERATION_BY_NAME, OPERATIONS
from lyra.models.validation import error_message
from lyra.services.operations import Operations

log = logging.getLogger(__name__)
PREFIX = "/api/v1"
MCP_PATH = "/mcp"
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]", "::1"]
# Every class of the error tree, one status each (exact class; tests/integration/rest/test_error_mapping.py checks that
# no class is missing and raises each through REST and MCP).
STATUS_FOR_ERROR: dict[type[LyraError], int] = {
    LyraError: status.HTTP_500_INTERNAL_SERVER_ERROR,
    errors.ConfigError: status.HTTP_500_INTERNAL_SERVER_ERROR,
    errors.InvalidInputError: status.HTTP_422_UNPROCESSABLE_CONTENT,
    errors.QueryRefused: status.HTTP_403_FORBIDDEN,
    errors.QuerySyntaxError: status.HTTP_422_UNPROCESSABLE_CONTENT,
    errors.QueryFailed: status.HTTP_422_UNPROCESSABLE_CONTENT,
    errors.QueryTimeout: status.HTTP_422_UNPROCESSABLE_CONTENT,
    errors.QueryMemoryExceeded: status.HTTP_422_UNPROCESSABLE_CONTENT,
    errors.ResultTooLarge: status.HTTP_422_UNPROCESSABLE_CONTENT,
    errors.NotFoundError: status.HTTP_404_NOT_FOUND,
    errors.ConflictError: status.HTTP_409_CONFLICT,
    errors.BudgetExhausted: status.HTTP_409_CONFLICT,
    errors.JobCancelled: status.HTTP_409_CONFLICT,
    errors.InvalidGraphDataError: status.HTTP_409_CONFLICT,
    errors.UnavailableError: status.HTTP_503_SERVICE_UNAVAILABLE,
    errors.GraphUnavailableError: status.HTTP_503_SERVICE_UNAVAILABLE,
    errors.SourceUnavailable: status.HTTP_503_SERVICE_UNAVAILABLE,
    errors.LLMError: status.HTTP_503_SERVICE_UNAVAILABLE,
    errors.GraphQueryError: status.HTTP_500_INTERNAL_SERVER_ERROR,
    errors.Neo4jServerError: status.HTTP_500_INTERNAL_SERVER_ERROR,
}
# FastAPI's 400 for a body it cannot decode (answered as invalid_input, like malformed JSON)
FASTAPI_BODY_PARSE_ERROR = "There was an error parsing the body"
# codes of the bodies answering Starlette's own HTTP errors (not raised by Lyra, so not in the error tree)
HTTP_ERROR_CODES = {
    status.HTTP_400_BAD_REQUEST: "bad_request",
    status.HTTP_404_NOT_FOUND: "not_found",
    status.HTTP_405_METHOD_NOT_ALLOWED: "method_not_allowed",
    status.HTTP_413_CONTENT_TOO_LARGE: "too_large",
}
TaskIdPath = Annotated[str, Path(pattern=TASK_ID_PATTERN.pattern, description="a task id")]
InterventionIdPath = Annotated[
    str, Path(pattern=api.INTERVENTION_ID_PATTERN, description="an intervention item id (iv_...)")
]
Background = Callable[[], AbstractContextManager[object]]
Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


def status_for(exc: LyraError) -> int:
    """The HTTP status of an error: its own class's entry, else the nearest ancestor's."""
    for cls in type(exc).__mro__:
        if cls in STATUS_FOR_ERROR:
            return STATUS_FOR_ERROR[cls]
    return status.HTTP_500_INTERNAL_SERVER_ERROR


# ----------------------------------------------------------------------------- parameters from the request models
_INTEGER_TEXT = re.compile(r"-?[0-9]{1,30}")
_NUMBER_TEXT = re.compile(r"-?[0-9]{1,30}(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,3})?")


def _scalar_kind(annotation: Any) -> type | None:
    """``bool``, ``int`` or ``float`` when the annotation is one of them (or it or None); else None."""
    options = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    kinds = [a for a in options if a is not type(None)]
    if len(kinds) == 1 and kinds[0] in (bool, int, float):
        kind: type = kinds[0]
        return kind
    return None


def _from_query_text(kind: type) -> Callable[[Any], Any]:
    """A query parameter is text; it becomes a boolean, integer or number only when written as one, exactly:
    ``true``/``false``; digits; a decimal number. ``1``/``yes``/``on``, ``7.0`` for an integer, ``1_000``, spaces,
    ``nan`` are refused like a JSON body's wrong type."""

    def convert(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if kind is bool:
            if value not in ("true", "false"):
                raise ValueError("must be true or false")
            return value == "true"
        if kind is int:
            if not _INTEGER_TEXT.fullmatch(value):
                raise ValueError("must be a whole number written in digits, e.g. 5")
            return int(value)
        if not _NUMBER_TEXT.fullmatch(value):
            raise ValueError("must be a number written in digits, e.g. 2.5")
        return float(value)

    return convert


def _strict_model(name: str, fields: dict[str, tuple[Any, Any]], *, query: bool) -> type[BaseModel]:
    """A parameter model validated like the request models (a :class:`~lyra.models.api.Request`: strict, no
    coercion, unknown names refused, a list also from its JSON text). A query
    model first turns each boolean, integer or number parameter's text into its value (:func:`_from_query_text`)."""
    if query:
        fields = {
            field: (Annotated[annotation, BeforeValidator(_from_query_text(kind))], info)
            if (kind := _scalar_kind(annotation)) is not None
            else (annotation, info)
            for field, (annotation, info) in fields.items()
        }
    generated: type[BaseModel] = create_model(name, __base__=api.Request, **fields)  # type: ignore[call-overload]
    return generated


def parameters_of(
    model: type[BaseModel], *, without: tuple[str, ...] = (), name: str, query: bool = False
) -> type[BaseModel]:
    """A query or body model holding ``model``'s own fields (types, limits, defaults, descriptions) minus those
    the route takes from its path; unknown parameters are refused like unknown request fields, and values are
    validated strictly, as the request models (and so MCP) validate them."""
    fields: dict[str, Any] = {
        field: (info.annotation, info) for field, info in model.model_fields.items() if field not in without
    }
    return _strict_model(name, fields, query=query)


QueueTargetsBody = parameters_of(api.QueueTargetsRequest, without=("task_id",), name="QueueTargetsBody")
AddClaimsBody = parameters_of(api.AddClaimsRequest, without=("task_id",), name="AddClaimsBody")
ReferenceCandidatesBody = parameters_of(
    api.QueueReferenceCandidatesRequest, without=("task_id",), name="ReferenceCandidatesBody"
)
StopTaskBody = parameters_of(api.StopTaskRequest, without=("task_id",), name="StopTaskBody")
JudgeRemainingBody = parameters_of(api.JudgeRemainingRequest, without=("task_id",), name="JudgeRemainingBody")
FeedbackBody = parameters_of(trust.FeedbackRequest, without=("task_id",), name="FeedbackBody")
ViewBody = parameters_of(api.QueryViewRequest, without=("name",), name="ViewBody")
AuthQueueQuery = parameters_of(api.GetAuthQueueRequest, without=("task_id",), name="AuthQueueQuery", query=True)
ResolveAuthBody = parameters_of(api.ResolveAuthRequest, without=("task_id", "intervention_id"), name="ResolveAuthBody")
StatusQuery = parameters_of(api.GetStatusRequest, without=("task_id",), name="StatusQuery", query=True)
GraphQuery = parameters_of(api.GetEvidenceGraphRequest, without=("task_id",), name="GraphQuery", query=True)
MaterialsQuery = _strict_model(
    "MaterialsQuery",
    {
        **{field: (info.annotation, info) for field, info in api.MaterialsOptions.model_fields.items()},
        "limit": (
            int | None,
            Field(
                default=None,
                ge=1,
                le=api.MATERIALS_PAGE_MAX,
                description="claims per page (oldest first), answered with next_cursor when more follow; without it "
                "every claim from cursor on is streamed as one JSON document",
            ),
        ),
        "cursor": (str | None, api.GetMaterialsRequest.model_fields["cursor"]),
    },
    query=True,
)
# claims per page when REST streams a whole task (each page is read, written and dropped before the next)
REST_STREAM_PAGE = 500
NoQuery = parameters_of(api.Request, name="NoQuery", query=True)
ProposalsQuery = parameters_of(learning.ListProposalsRequest, name="ProposalsQuery", query=True)
RulesQuery = parameters_of(learning.ListRulesRequest, name="RulesQuery", query=True)
FeedbackListQuery = parameters_of(learning.FeedbackForComponentRequest, name="FeedbackListQuery", query=True)
SimilarQuery = parameters_of(learning.FindSimilarRequest, without=("id",), name="SimilarQuery", query=True)
ApproveBody = parameters_of(learning.ApproveProposalRequest, without=("id",), name="ApproveBody")
RejectBody = parameters_of(learning.RejectProposalRequest, without=("id",), name="RejectBody")
RetireBody = parameters_of(learning.RetireRuleRequest, without=("id",), name="RetireBody")


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
        code = status_for(exc)
        if code >= 500:
            log.error("request failed: %s", exc.message)
        return _error(code, exc.to_dict())

    # FastAPI's request validation, and a request model built inside a route from path or query values
    @app.exception_handler(RequestValidationError)
    @app.exception_handler(ValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError | ValidationError) -> JSONResponse:
        first = exc.errors()[0]
        if first.get("type") == "json_invalid":  # a body that is not JSON: its loc is (body, offset), not a field
            reason = first.get("ctx", {}).get("error", "not JSON")
            message = f"body: not a JSON document ({reason} at character {first['loc'][-1]})"
            return _error(
                status.HTTP_422_UNPROCESSABLE_CONTENT, {"error": "invalid_input", "message": message, "field": "body"}
            )
        field = _field_from_loc(tuple(first.get("loc", ())))
        return _error(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            {
                "error": "invalid_input",
                "message": f"{field}: {error_message(first.get('msg', 'invalid'))}",
                "field": field,
            },
        )

    # Starlette's and FastAPI's own refusals: an unknown route or method, a body that cannot be decoded as JSON
    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == status.HTTP_400_BAD_REQUEST and exc.detail == FASTAPI_BODY_PARSE_ERROR:
            # a body FastAPI could not decode (invalid UTF-8, ...): bad input like malformed JSON, same status
            body = {"error": "invalid_input", "message": "body: not a JSON document in UTF-8", "field": "body"}
            return _error(status.HTTP_422_UNPROCESSABLE_CONTENT, body)
        code = HTTP_ERROR_CODES.get(exc.status_code, "http_error")
        return JSONResponse(
            status_code=exc.status_code, content={"error": code, "message": str(exc.detail)}, headers=exc.headers
        )

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return _error(500, {"error": "internal_error", "message": f"unexpected {type(exc).__name__}; see the log"})


# ----------------------------------------------------------------------------- security
def _allowed_hosts(settings: Settings) -> list[str]:
    return sorted({*LOOPBACK_HOSTS, settings.api_host, *settings.api_allowed_hosts})


def _own_origins(settings: Settings) -> list[str]:
    """The server's own origins (same-origin browser requests send them too): each allowed host, this port."""
    return [
        f"http://{h if ':' not in h or h.startswith('[') else f'[{h}]'}:{settings.api_port}"
        for h in _allowed_hosts(settings)
    ]


def _too_large(max_bytes: int) -> dict[str, Any]:
    return {"error": "too_large", "message": f"request body over {max_bytes} bytes", "field": "body"}


class BodyLimit:
    """Refuses a request body over ``max_bytes`` by the bytes actually received, chunked bodies included.

    A declared ``Content-Length`` over the limit is answered at once, unread. Otherwise ``receive`` is wrapped:
    the bytes are counted as they arrive, and once over the limit nothing more is read, the 413 is sent (unless the
    app has already started its response), and the app is told the client went away, so no route runs on a
    partial body; whatever the app sends afterwards is dropped.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _send_413(self, send: Send) -> None:
        body = json.dumps(_too_large(self.max_bytes)).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._send_413(send)
            return
        received = 0
        refused = False
        started = False

        async def limited_receive() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    refused = True
                    if not started:
                        await self._send_413(send)
                    log.warning("refused a request body over %d bytes (%s)", self.max_bytes, scope.get("path"))
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused and not started:
                return  # the 413 went out instead
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if not refused:
                raise
            log.debug("the app stopped after its request body was refused", exc_info=True)


def _install_guards(app: FastAPI, settings: Settings) -> None:
    """The guards as middleware; added innermost first (Starlette wraps each new one around the others)."""
    app.add_middleware(
        McpMessages,
        path=MCP_PATH,
        max_sessions=settings.mcp_max_sessions,
        idle_seconds=settings.mcp_session_idle_seconds,
    )
    hosts = {h.lower() for h in _allowed_hosts(settings)}
    configured_origins = set(settings.api_allowed_origins)
    token = settings.api_token.get_secret_value() if settings.api_token else None

    async def token_guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if token and request.url.path not in ("/healthz",):
            scheme, _, credentials = request.headers.get("authorization", "").strip().partition(" ")
            # the scheme is case-insensitive (RFC 9110 §11.1); the token is compared in constant time
            valid = scheme.lower() == "bearer" and hmac.compare_digest(credentials.strip().encode(), token.encode())
            if not valid:
                return JSONResponse(
                    status_code=401,
                    content={"error": "unauthorized", "message": "missing or wrong bearer token"},
                    headers={"WWW-Authenticate": "Bearer"},
                )
        return await call_next(request)

    async def host_and_origin_guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
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
        same_origin = origin == f"{request.url.scheme}://{host}"
        if origin and not same_origin and origin not in configured_origins:
            return _error(
                403,
                {
                    "error": "invalid_origin",
                    "message": f"Origin {origin!r} is not allowed",
                    "hint": "add the exact origin (scheme, host and port) to LYRA_API_ALLOWED_ORIGINS",
                },
            )
        return await call_next(request)

    app.add_middleware(BaseHTTPMiddleware, dispatch=token_guard)
    if configured_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=sorted(configured_origins),
            allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-ID"],
            expose_headers=["Mcp-Session-Id"],
            max_age=600,
        )
    app.add_middleware(BaseHTTPMiddleware, dispatch=host_and_origin_guard)
    app.add_middleware(BodyLimit, max_bytes=settings.api_max_body_bytes)
    app.add_middleware(SingleHeaders)


# ----------------------------------------------------------------------------- routes
def _model_response(model: BaseModel) -> Response:
    """Large responses are serialised once, by pydantic's JSON encoder (the route still declares its model)."""
    return Response(content=model.model_dump_json(), media_type="application/json")


def _routers() -> tuple[dict[str, APIRouter], Callable[..., Callable[[Endpoint], Endpoint]]]:
    """One router per feature (the operations' REST tags), and ``route(name, **extra)``: the decorator that puts an
    endpoint on its operation's router with the method, path and status code the catalogue declares for it."""
    routers = {
        tag: APIRouter(prefix=PREFIX, tags=[tag])
        for tag in dict.fromkeys(operation.rest.tag for operation in OPERATIONS if operation.rest)
    }

    def route(name: str, **extra: Any) -> Callable[[Endpoint], Endpoint]:
        rest = OPERATION_BY_NAME[name].rest
        if rest is None:
            raise ValueError(f"operation {name} has no REST route in the catalogue")
        return routers[rest.tag].api_route(rest.path, methods=[rest.method], status_code=rest.status_code, **extra)

    return routers, route


def _install_routes(app: FastAPI, ops: Operations, token: str | None = None) -> None:
    """The operations' routes, one router per feature; their methods, paths and status codes come from the
    catalogue (:mod:`lyra.models.catalogue`), the parameters from the request models."""
    routers, route = _routers()

    @app.get("/healthz", tags=["service"], include_in_schema=False)
    def healthz() -> api.Health:
        return ops.health()

    @route("create_task")
    def create_task(request: api.CreateTaskRequest) -> api.CreateTaskResponse:
        """Create a research task for a hypothesis (it becomes the first claim; a question only names the task and
        needs config.claims)."""
        return ops.create_task(request)

    @route("list_tasks")
    def list_tasks(_query: Annotated[NoQuery, Query()]) -> api.TaskList:  # type: ignore[valid-type]
        """All tasks, newest first."""
        return ops.list_tasks()

    @route("add_claims")
    def add_claims(task_id: TaskIdPath, body: AddClaimsBody) -> api.AddClaimsResponse:  # type: ignore[valid-type]
        """Add claims to a task; one it already holds (same text, ignoring case, spacing and trailing punctuation)
        comes back with created=false."""
        return ops.add_claims(api.AddClaimsRequest(task_id=task_id, **_fields(body)))

    @route("queue_targets")
    def queue_targets(task_id: TaskIdPath, body: QueueTargetsBody) -> api.QueueTargetsResponse:  # type: ignore[valid-type]
        """Queue targets (file | query | url | doi) as background jobs; duplicates are skipped."""
        return ops.queue_targets(api.QueueTargetsRequest(task_id=task_id, **_fields(body)))

    @route("queue_reference_candidates")
    def queue_reference_candidates(
        task_id: TaskIdPath,
        body: ReferenceCandidatesBody,  # type: ignore[valid-type]
    ) -> api.QueueReferenceCandidatesResponse:
        """Queue cited papers the task has not read yet (the reference_candidates view), most-cited first."""
        return ops.queue_reference_candidates(api.QueueReferenceCandidatesRequest(task_id=task_id, **_fields(body)))

    @route("get_status")
    def get_status(task_id: TaskIdPath, query: Annotated[StatusQuery, Query()]) -> api.TaskStatus:  # type: ignore[valid-type]
        """Jobs, metrics, budget, milestones, blocked domains; long-polls up to `wait` seconds."""
        return ops.get_status(api.GetStatusRequest(task_id=task_id, **_fields(query)))

    @route("get_job")
    def get_job(job_id: str, _query: Annotated[NoQuery, Query()]) -> api.JobInfo:  # type: ignore[valid-type]
        """One job: state, attempts, error, result, and its progress while it runs."""
        return ops.get_job(api.GetJobRequest(id=job_id))

    @route("get_auth_queue")
    def get_auth_queue(task_id: TaskIdPath, query: Annotated[AuthQueueQuery, Query()]) -> api.AuthQueue:  # type: ignore[valid-type]
        """Pages the task's jobs could not read (CAPTCHA / login / consent walls), waiting for a person."""
        return ops.get_auth_queue(api.GetAuthQueueRequest(task_id=task_id, **_fields(query)))

    @route("resolve_auth")
    def resolve_auth(
        task_id: TaskIdPath,
        intervention_id: InterventionIdPath,
        body: ResolveAuthBody,  # type: ignore[valid-type]
    ) -> api.ResolveAuthResponse:
        """retry | skip | cookie (the Cookie header value a person's browser sends to the site; kept secret)."""
        return ops.resolve_auth(
            api.ResolveAuthRequest(task_id=task_id, intervention_id=intervention_id, **_fields(body))
        )

    @route("stop_task")
    def stop_task(task_id: TaskIdPath, body: Annotated[StopTaskBody | None, Body()] = None) -> api.StopTaskResponse:  # type: ignore[valid-type]
        """Stop the task's jobs (graceful | immediate), optionally cleaning up (soft | hard_orphans_only)."""
        return ops.stop_task(api.StopTaskRequest(task_id=task_id, **_fields(body)))

    @route("judge_remaining")
    def judge_remaining(
        task_id: TaskIdPath,
        body: Annotated[JudgeRemainingBody | None, Body()] = None,  # type: ignore[valid-type]
    ) -> api.JudgeRemainingResponse:
        """Judge the task's pending candidate pairs now (best first, at most max_pairs, within the pair budget)."""
        return ops.judge_remaining(api.JudgeRemainingRequest(task_id=task_id, **_fields(body)))

    @route("get_materials", response_model=api.Materials)
    def get_materials(task_id: TaskIdPath, query: Annotated[MaterialsQuery, Query()]) -> Response:  # type: ignore[valid-type]
        """Claims with confidence, uncertainty, controversy and their evidence, computed now from the edges."""
        fields = _fields(query)
        limit, cursor = fields.pop("limit"), fields.pop("cursor")
        options = api.MaterialsOptions(**fields)
        if limit is not None:
            request = api.GetMaterialsRequest(task_id=task_id, options=options, limit=limit, cursor=cursor)
            return _model_response(ops.get_materials(request))
        request = api.GetMaterialsRequest(task_id=task_id, options=options, limit=REST_STREAM_PAGE, cursor=cursor)
        return StreamingResponse(ops.get_materials_json(request), media_type="application/json")

    @route("get_evidence_graph", response_model=api.EvidenceGraph)
    def get_evidence_graph(task_id: TaskIdPath, query: Annotated[GraphQuery, Query()]) -> Response:  # type: ignore[valid-type]
        """The task's evidence subgraph, with a Cypher query and a Neo4j Browser link for it."""
        return _model_response(ops.get_evidence_graph(api.GetEvidenceGraphRequest(task_id=task_id, **_fields(query))))

    @route("list_views")
    def list_views(_query: Annotated[NoQuery, Query()]) -> api.ViewList:  # type: ignore[valid-type]
        """The named read-only Cypher views."""
        return ops.list_views()

    @route("query_view")
    def query_view(name: str, body: Annotated[ViewBody | None, Body()] = None) -> api.QueryResult:  # type: ignore[valid-type]
        """Run a named view with its parameters."""
        return ops.query_view(api.QueryViewRequest(name=name, **_fields(body)))

    @route("query_graph")
    def query_graph(request: api.QueryGraphRequest) -> api.QueryResult:
        """Read-only Cypher (refused unless EXPLAIN says read-only), with a timeout and a row limit."""
        return ops.query_graph(request)

    @route("collect_garbage")
    def collect_garbage(request: Annotated[api.CollectGarbageRequest | None, Body()] = None) -> api.GarbageReport:
        """Graph-wide orphan sweep (counts first; dry_run defaults to true; a real run needs dry_run=false and
        confirm=true; refused with 409 while jobs run)."""
        return ops.collect_garbage(request or api.CollectGarbageRequest())

    @route("vector_search")
    def vector_search(request: api.VectorSearchRequest) -> api.SearchResults:
        """Fragments and/or claims most similar to a text."""
        return ops.vector_search(request)

    @route("feedback")
    def feedback(task_id: TaskIdPath, body: FeedbackBody) -> trust.FeedbackResponse:  # type: ignore[valid-type]
        """A human correction: domain_block | domain_unblock | domain_clear_override | page_unblock | claim_reject |
        claim_restore | edge_correct, with its args."""
        return ops.feedback(trust.FeedbackRequest(task_id=task_id, **_with_reviewer(_fields(body), token)))

    @route("check_domain")
    def check_domain(domain: str, _query: Annotated[NoQuery, Query()]) -> trust.DomainDecision:  # type: ignore[valid-type]
        """May Lyra fetch / use this domain, and why (the decision every fetch path uses)."""
        return ops.check_domain(trust.CheckDomainRequest(domain=domain))

    @route("calibration_metrics")
    def calibration_metrics(request: trust.CalibrationMetricsRequest) -> trust.CalibrationResponse:
        """get_stats | evaluate | get_evaluations | fit."""
        return ops.calibration_metrics(request)

    @route("calibration_rollback")
    def calibration_rollback(request: trust.CalibrationRollbackRequest) -> trust.CalibrationResponse:
        """Make a calibrator version active (0: none)."""
        return ops.calibration_rollback(request)

    # ------------------------------------------------------------ learning from reviewers
    @route("get_feedback_for_component")
    def feedback_for_component(query: Annotated[FeedbackListQuery, Query()]) -> learning.FeedbackRecordList:  # type: ignore[valid-type]
        """The newest feedback records about one component (stance, claims, domain_policy, ...)."""
        return ops.get_feedback_for_component(learning.FeedbackForComponentRequest(**_fields(query)))

    @route("get_feedback")
    def get_feedback(record_id: str, _query: Annotated[NoQuery, Query()]) -> learning.FeedbackRecord:  # type: ignore[valid-type]
        """One feedback record with the evaluator's classification."""
        return ops.get_feedback(learning.GetFeedbackRequest(id=record_id))

    @route("find_similar_feedback")
    def find_similar_feedback(record_id: str, query: Annotated[SimilarQuery, Query()]) -> learning.SimilarRecords:  # type: ignore[valid-type]
        """Feedback records whose context (claim, passage, labels, comment) is similar to this one's."""
        return ops.find_similar_feedback(learning.FindSimilarRequest(id=record_id, **_fields(query)))

    @route("generate_proposals")
    def generate_proposals(
        request: Annotated[learning.GenerateProposalsRequest | None, Body()] = None,
    ) -> learning.ProposalsJob:
        """Queue a batch of proposals from the corrections not used yet (measured: minutes, runs the judge) as a
        job; returns its id at once: GET /jobs/{job_id} shows its progress and result."""
        return ops.queue_proposals(request or learning.GenerateProposalsRequest())

    @route("list_proposals")
    def list_proposals(query: Annotated[ProposalsQuery, Query()]) -> learning.ProposalList:  # type: ignore[valid-type]
        """Proposals, newest first (status, component, limit)."""
        return ops.list_proposals(learning.ListProposalsRequest(**_fields(query)))

    @route("get_proposal")
    def get_proposal(proposal_id: str, _query: Annotated[NoQuery, Query()]) -> learning.Proposal:  # type: ignore[valid-type]
        """One proposal with its evidence, predicted effect, conflicts and reviews."""
        return ops.get_proposal(learning.GetProposalRequest(id=proposal_id))

    @route("approve_proposal")
    def approve_proposal(
        proposal_id: str,
        body: Annotated[ApproveBody | None, Body()] = None,  # type: ignore[valid-type]
    ) -> learning.Proposal:
        """One reviewer's approval (two distinct reviewers, or one with override_reason, activate it)."""
        fields = _with_reviewer(_fields(body), token)
        return ops.approve_proposal(learning.ApproveProposalRequest(id=proposal_id, **fields))

    @route("reject_proposal")
    def reject_proposal(proposal_id: str, body: RejectBody) -> learning.Proposal:  # type: ignore[valid-type]
        """Reject a pending proposal (reason required)."""
        fields = _with_reviewer(_fields(body), token)
        return ops.reject_proposal(learning.RejectProposalRequest(id=proposal_id, **fields))

    @route("propose_rule")
    def propose_rule(request: learning.ProposeRuleRequest) -> learning.Proposal:
        """A reviewer-written guideline for a component, as a proposal (the same two-reviewer approval)."""
        return ops.propose_rule(learning.ProposeRuleRequest(**_with_reviewer(dict(request), token)))

    @route("list_rules")
    def list_rules(query: Annotated[RulesQuery, Query()]) -> learning.RuleList:  # type: ignore[valid-type]
        """Learned rules (active, or all with include_retired) and each component's rule-set version."""
        return ops.list_rules(learning.ListRulesRequest(**_fields(query)))

    @route("rollback_rules")
    def rollback_rules(request: learning.RollbackRulesRequest) -> learning.RuleList:
        """Restore an earlier rule-set version of a component (0: no rules) as a new version."""
        fields = _with_reviewer(dict(request), token)
        return ops.rollback_rules(learning.RollbackRulesRequest(**fields))

    @route("retire_rule")
    def retire_rule(rule_id: str, body: RetireBody) -> learning.RuleList:  # type: ignore[valid-type]
        """Retire an active learned rule (reason required)."""
        fields = _with_reviewer(_fields(body), token)
        return ops.retire_rule(learning.RetireRuleRequest(id=rule_id, **fields))

    @app.get("/tasks/{task_id}/report", response_class=HTMLResponse, tags=["report"])
    def report(task_id: TaskIdPath) -> HTMLResponse:
        """The evidence report page of a task."""
        return HTMLResponse(ops.report_html(task_id))

    for router in routers.values():
        app.include_router(router)


def _with_reviewer(fields: dict[str, Any], token: str | None) -> dict[str, Any]:
    """The reviewer of a REST call: the body's reviewer_id, else one derived from the bearer token (a short hash,
    never the token), else anonymous."""
    if fields.get("reviewer_id") or not token:
        return fields
    return {**fields, "reviewer_id": "rest-token:" + hashlib.sha256(token.encode()).hexdigest()[:12]}


def _fields(params: BaseModel | None) -> dict[str, Any]:
    """The fields a generated parameter model holds, as given or defaulted (not re-serialised)."""
    return {} if params is None else dict(params)


def create_app(
    ops: Operations,
    settings: Settings,
    *,
    mcp_server: MCPServer | None = None,
    background: Background | None = None,
) -> FastAPI:
    """The HTTP app over ``ops``. ``mcp_server`` is served at ``/mcp`` (streamable HTTP); ``background`` is entered
    for the app's lifetime (the composition root passes the job worker pool)."""
    mcp_routes: list[Any] = []
    if mcp_server is not None:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"{h}:*" for h in _allowed_hosts(settings)] + _allowed_hosts(settings),
            allowed_origins=_own_origins(settings) + list(settings.api_allowed_origins),
        )
        mcp_app = mcp_server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            transport_security=security,
            host=settings.api_host,
            stateless_http=False,
            max_sessions=settings.mcp_max_sessions,
            session_idle_timeout=settings.mcp_session_idle_seconds,
        )
        mcp_routes = list(mcp_app.routes)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if mcp_server is not None:
                await stack.enter_async_context(mcp_server.session_manager.run())
            if background is not None:
                stack.enter_context(background())
            yield

    app = FastAPI(
        title="Lyra",
        version="0.1.0",
        summary="Evidence graph for AI-assisted research: claims, evidence and Bayesian confidence over Neo4j.",
        lifespan=lifespan,
    )
    _install_error_handlers(app)
    _install_guards(app, settings)
    _install_routes(app, ops, settings.api_token.get_secret_value() if settings.api_token else None)
    app.router.routes.extend(mcp_routes)
    return app


__all__ = ["STATUS_FOR_ERROR", "BodyLimit", "create_app", "status_for"]
