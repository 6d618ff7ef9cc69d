"""The REST adapter: ``create_app(ops, settings, mcp_server=...)`` serves the operations under ``/api/v1``, the
given MCP server's streamable HTTP endpoint at ``/mcp``, and the evidence report pages at ``/tasks/{task_id}/report``
— all in one ASGI app. The composition root (``lyra.bootstrap.build_http_app``) builds the MCP server and hands it
in; this module imports no other adapter and nothing below :class:`~lyra.services.operations.Operations`.

The routes are :mod:`lyra.api.routes`: one router per feature, each endpoint at the method, path and status code the
catalogue (:mod:`lyra.models.catalogue`) declares for its operation, taking the request's body or query as the
declared models of :mod:`lyra.models` and :mod:`lyra.api.params` (the request models' own fields: same types,
limits, defaults and descriptions), so the two doors cannot drift. This module assembles them with the error
handlers and the guards. Errors: Lyra's error tree (``STATUS_FOR_ERROR``, one status per class),
request validation, a body that is not JSON, an unknown route or method become JSON bodies
``{"error", "message", "field"?, "hint"?}``; an unexpected failure is a 500 without a traceback.

Guards, outermost first: :class:`~lyra.api.guards.SingleHeaders` (one Host, Authorization and Origin header),
:class:`BodyLimit` (the bytes actually received, for every route and ``/mcp``), the Host and Origin checks (DNS
rebinding; browsers only from the server's own origin or ``LYRA_API_ALLOWED_ORIGINS``), Starlette's CORS
middleware for those configured origins (so a preflight is answered before the token check), the bearer token,
and :class:`~lyra.api.guards.McpMessages` (JSON-RPC ids, the answer at the MCP session cap).
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lyra.api.guards import McpMessages, SingleHeaders
from lyra.api.routes import ROUTERS
from lyra.api.routing import PREFIX, serve
from lyra.core import errors
from lyra.core.errors import LyraError
from lyra.core.settings import ApiSettings
from lyra.models.validation import error_message
from lyra.services.operations import Operations

log = logging.getLogger(__name__)
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
    errors.RateLimited: status.HTTP_429_TOO_MANY_REQUESTS,
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
Background = Callable[[], AbstractContextManager[object]]


def status_for(exc: LyraError) -> int:
    """The HTTP status of an error: its own class's entry, else the nearest ancestor's."""
    for cls in type(exc).__mro__:
        if cls in STATUS_FOR_ERROR:
            return STATUS_FOR_ERROR[cls]
    return status.HTTP_500_INTERNAL_SERVER_ERROR


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
def _allowed_hosts(settings: ApiSettings) -> list[str]:
    return sorted({*LOOPBACK_HOSTS, settings.api_host, *settings.api_allowed_hosts})


def _own_origins(settings: ApiSettings) -> list[str]:
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


def _install_guards(app: FastAPI, settings: ApiSettings) -> None:
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


def create_app(
    ops: Operations,
    settings: ApiSettings,
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
    serve(app, ops, settings.api_token.get_secret_value() if settings.api_token else None)
    for router in ROUTERS:
        app.include_router(router)
    app.router.routes.extend(mcp_routes)
    return app


__all__ = ["MCP_PATH", "PREFIX", "STATUS_FOR_ERROR", "BodyLimit", "create_app", "status_for"]
