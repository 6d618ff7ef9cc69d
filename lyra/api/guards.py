"""HTTP guards in front of every route (decision record 0014): one ``Host`` / ``Authorization`` / ``Origin`` header per
request, and the JSON-RPC checks the MCP SDK's streamable HTTP transport leaves out (a request id of the wrong
type, a clear answer when the session cap is reached).

Plain ASGI middleware (no response buffering except the small JSON-RPC bodies of ``POST /mcp``, which
:class:`~lyra.api.app.BodyLimit` has already capped).
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

# headers a request may carry at most once: the checks read one value, so a second one must not slip past them
SINGLE_HEADERS = (b"host", b"authorization", b"origin")
INVALID_REQUEST = -32600  # JSON-RPC 2.0
SERVER_ERROR = -32000  # JSON-RPC 2.0: the start of the implementation-defined server error range


async def send_json(
    send: Send, status: int, body: dict[str, Any], headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    data = json.dumps(body).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": data})


class SingleHeaders:
    """Refuses a request carrying more than one ``Host``, ``Authorization`` or ``Origin`` header with 400
    (``duplicate_header``): the Host, Origin and token checks read one value, and which one a proxy or a framework
    picks differs (the first here), so a second one could carry what the checks never saw."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            names = [name.lower() for name, _ in scope["headers"]]
            repeated = [name.decode() for name in SINGLE_HEADERS if names.count(name) > 1]
            if repeated:
                header = repeated[0].title()
                log.warning(
                    "refused a request with %d %s headers (%s)",
                    names.count(repeated[0].encode()),
                    header,
                    scope.get("path"),
                )
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                body = {
                    "error": "duplicate_header",
                    "message": f"the request carries {names.count(repeated[0].encode())} {header} headers; "
                    f"send exactly one",
                }
                await send_json(send, 400, body, ((b"connection", b"close"),))
                return
        await self.app(scope, receive, send)


def id_problem(message: Any) -> str | None:
    """Why a JSON-RPC message's ``id`` is invalid, or None when it is fine (or the message is no single object).

    JSON-RPC 2.0 allows a string, a number or (responses only) null; MCP narrows numbers to integers and forbids
    null in requests. A notification has no ``id`` at all."""
    if not isinstance(message, dict) or "id" not in message:
        return None
    value = message["id"]
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return None
    if value is None and "method" not in message and "error" in message:
        return None  # an error response whose request id could not be read
    if isinstance(value, float):
        kind = "NaN" if math.isnan(value) else "an infinite number" if math.isinf(value) else f"the number {value!r}"
        what = kind if not value.is_integer() or math.isinf(value) else f"{kind} (not an integer)"
    else:
        what = {type(None): "null", bool: "a boolean", list: "an array", dict: "an object"}.get(type(value), "?")
    return f"Invalid Request: the id must be a string or an integer, not {what}"


class McpMessages:
    """In front of the MCP SDK's streamable HTTP endpoint (``path``), for ``POST`` requests:

    - a JSON-RPC message whose ``id`` is not a string or an integer (NaN, 1.5e308, an object, an array, null,
      true) gets HTTP 400 with the JSON-RPC error ``-32600 Invalid Request`` and ``id: null``, as the MCP
      specification's streamable HTTP transport says for a message it cannot accept (the SDK took it as a
      notification: 202 and no answer);
    - the SDK's refusal of a new session at its cap (``LYRA_MCP_MAX_SESSIONS``) is answered as HTTP 503 with the
      JSON-RPC error ``-32000`` naming the cap and the way out, and ``Retry-After``.

    Everything else goes to the SDK unchanged (the body is replayed as received).
    """

    def __init__(self, app: ASGIApp, *, path: str, max_sessions: int, idle_seconds: float) -> None:
        self.app = app
        self.path = path
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        body = b""
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                return  # the client left, or the body limit answered 413
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            parsed = None  # the SDK answers a parse error
        problem = id_problem(parsed)
        if problem is not None:
            log.info("refused a JSON-RPC message with an invalid id on %s", self.path)
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": problem}}
            await send_json(send, 400, error)
            return

        replay = iter(messages)

        async def replayed() -> Message:
            return next(replay, None) or await receive()

        new_session = not any(name.lower() == b"mcp-session-id" for name, _ in scope["headers"])
        request_id = parsed.get("id") if isinstance(parsed, dict) else None
        refused = False

        async def checked_send(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start" and new_session and message["status"] == 503:
                refused = True
                await send_json(send, 503, self._over_cap(request_id), ((b"retry-after", b"60"),))
                return
            if not refused:
                await send(message)

        await self.app(scope, replayed, checked_send if new_session else send)

    def _over_cap(self, request_id: Any) -> dict[str, Any]:
        message = (
            f"too many open MCP sessions: at most {self.max_sessions} at once (LYRA_MCP_MAX_SESSIONS); close one "
            f"(DELETE {self.path} with its Mcp-Session-Id) or retry later: a session idle for "
            f"{self.idle_seconds:g} s is closed (LYRA_MCP_SESSION_IDLE_SECONDS)"
        )
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": SERVER_ERROR, "message": message}}


__all__ = ["McpMessages", "SingleHeaders", "id_problem"]
