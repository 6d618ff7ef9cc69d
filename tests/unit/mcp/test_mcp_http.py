"""The HTTP app's MCP endpoint and guards: JSON-RPC ids, unknown prompts / tools / resources,
the session cap and idle expiry, duplicate Host / Authorization / Origin headers.

The app is the one `lyra serve` runs (``create_app`` with the MCP server at /mcp), over stub operations (nothing
here reaches an operation), driven through httpx's ASGI transport with the app's lifespan running (the MCP
session manager lives there). Duplicate headers are also sent over a real socket by the hostile-input suite.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import SecretStr, ValidationError

from lyra.api.app import create_app
from lyra.api.guards import id_problem
from lyra.core.settings import load_settings
from lyra.mcp.server import create_mcp_server
from tests.support.stub_operations import StubOperations

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@asynccontextmanager
async def serving(**settings: Any) -> AsyncIterator[httpx.AsyncClient]:
    ops = StubOperations()
    app = create_app(ops, load_settings(**settings).api, mcp_server=create_mcp_server(ops))  # type: ignore[arg-type]
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
            yield client


def messages(answer: httpx.Response) -> list[dict[str, Any]]:
    if answer.headers.get("content-type", "").startswith("application/json"):
        return [answer.json()]
    return [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]


async def open_session(client: httpx.AsyncClient) -> dict[str, str]:
    answer = await client.post("/mcp", json=INIT, headers=ACCEPT)
    assert answer.status_code == 200, answer.text
    headers = {**ACCEPT, "mcp-session-id": answer.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    await client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


def run(test: Callable[[], Awaitable[None]]) -> None:
    anyio.run(test)


# ----------------------------------------------------------------------------------------------- JSON-RPC ids
@pytest.mark.parametrize(
    "raw_id",
    ["NaN", "1.5e308", "Infinity", '{"$ne": 1}', "[1]", "null", "true", "false", "1.0", "2.5"],
)
def test_a_request_with_an_invalid_id_gets_400_and_invalid_request(raw_id: str) -> None:
    async def test() -> None:
        async with serving() as client:
            headers = await open_session(client)
            body = f'{{"jsonrpc": "2.0", "id": {raw_id}, "method": "tools/list"}}'
            answer = await client.post("/mcp", content=body, headers=headers)
            assert answer.status_code == 400, answer.text
            error = answer.json()
            assert error["id"] is None and error["error"]["code"] == -32600, error
            assert "id must be a string or an integer" in error["error"]["message"]
            ping = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=headers)
            assert ping.status_code == 200 and "result" in messages(ping)[0]  # the session lives on
            # an invalid id on the opening request: no session is opened
            opening = await client.post(
                "/mcp", content=json.dumps(INIT).replace('"id": 1', f'"id": {raw_id}'), headers=ACCEPT
            )
            assert opening.status_code == 400 and "mcp-session-id" not in opening.headers

    run(test)


def test_valid_ids_and_notifications_pass() -> None:
    assert [id_problem(m) for m in ({"id": "a"}, {"id": 0}, {"id": 10**30}, {"method": "x"}, [{"id": None}])] == [
        None
    ] * 5
    assert id_problem({"id": None, "error": {"code": 1, "message": "m"}}) is None  # an error response may say null

    async def test() -> None:
        async with serving() as client:
            headers = await open_session(client)
            for request_id in ("req-1", 7, 2**53 + 1):
                body = {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
                answer = await client.post("/mcp", json=body, headers=headers)
                assert answer.status_code == 200 and messages(answer)[0]["id"] == request_id

    run(test)


# ----------------------------------------------------------------------------------------------- unknown names
def test_an_unknown_prompt_tool_or_resource_is_invalid_params_naming_it() -> None:
    async def test() -> None:
        async with Client(create_mcp_server(StubOperations())) as client:  # type: ignore[arg-type]
            with pytest.raises(MCPError) as prompt:
                await client.get_prompt("' DETACH DELETE n //")
            assert prompt.value.error.code == -32602
            assert 'unknown prompt "\' DETACH DELETE n //"' in prompt.value.error.message
            assert "this server offers no prompts" in prompt.value.error.message
            with pytest.raises(MCPError) as tool:
                await client.call_tool("wipe_all_data", {})
            assert tool.value.error.code == -32602 and "unknown tool 'wipe_all_data'" in tool.value.error.message
            assert "create_task" in tool.value.error.message and "query_graph" in tool.value.error.message
            with pytest.raises(MCPError) as resource:
                await client.read_resource("file:///etc/passwd")
            assert resource.value.error.code == -32602
            assert "unknown resource 'file:///etc/passwd'" in resource.value.error.message

    run(test)


# ----------------------------------------------------------------------------------------------- sessions
def test_sessions_over_the_cap_get_503_and_idle_sessions_expire() -> None:
    async def test() -> None:
        async with serving(mcp_max_sessions=3, mcp_session_idle_seconds=1.0) as client:
            sessions = [await open_session(client) for _ in range(3)]
            refused = await client.post("/mcp", json=INIT, headers=ACCEPT)
            assert refused.status_code == 503 and refused.headers["retry-after"] == "60"
            error = refused.json()
            assert error["id"] == 1 and error["error"]["code"] == -32000, error
            assert "at most 3" in error["error"]["message"] and "LYRA_MCP_MAX_SESSIONS" in error["error"]["message"]
            for headers in sessions:  # the open sessions are unaffected
                ping = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 9, "method": "ping"}, headers=headers)
                assert ping.status_code == 200
            # idle for longer than LYRA_MCP_SESSION_IDLE_SECONDS: closed, so there is room again. Asked by opening a
            # session (a ping would keep the idle one alive), until room comes or 20 s pass: a busy machine may fire
            # the SDK's idle timer late, never early
            started = anyio.current_time()
            await anyio.sleep(1.0)
            while (again := await client.post("/mcp", json=INIT, headers=ACCEPT)).status_code == 503:
                assert anyio.current_time() - started < 20, "no idle session was closed within 20 s"
                await anyio.sleep(0.25)
            assert again.status_code == 200 and anyio.current_time() - started >= 1.0
            assert again.headers["mcp-session-id"] not in {s["mcp-session-id"] for s in sessions}
            gone = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 9, "method": "ping"}, headers=sessions[0])
            assert gone.status_code == 404

    run(test)


def test_the_session_settings_are_checked() -> None:
    for bad in ({"mcp_max_sessions": 0}, {"mcp_session_idle_seconds": 0}, {"mcp_session_idle_seconds": float("inf")}):
        with pytest.raises(ValidationError, match=next(iter(bad))):
            load_settings(**bad)
    assert (load_settings().api.mcp_max_sessions, load_settings().api.mcp_session_idle_seconds) == (100, 1800)


# ----------------------------------------------------------------------------------------------- duplicate headers
@pytest.mark.parametrize(
    ("path", "method"),
    [("/api/v1/tasks", "GET"), ("/mcp", "POST"), ("/tasks/example_task/report", "GET"), ("/healthz", "GET")],
)
@pytest.mark.parametrize(
    "headers",
    [
        [("host", "127.0.0.1:8765"), ("host", "evil.example")],
        [("authorization", "Bearer right-token"), ("authorization", "Bearer wrong")],
        [("authorization", "Bearer wrong"), ("authorization", "Bearer right-token")],
        [("origin", "http://127.0.0.1:8765"), ("origin", "https://evil.example")],
    ],
)
def test_a_request_with_two_host_authorization_or_origin_headers_is_refused(
    path: str, method: str, headers: list[tuple[str, str]]
) -> None:
    name = headers[0][0]

    async def test() -> None:
        async with serving(api_token=SecretStr("right-token")) as client:
            base = [("authorization", "Bearer right-token")] if name != "authorization" else []
            sent = httpx.Headers([*base, *headers, ("accept", ACCEPT["accept"])])
            answer = await client.request(method, path, headers=sent, json=INIT if method == "POST" else None)
            assert answer.status_code == 400, answer.text
            body = answer.json()
            assert body["error"] == "duplicate_header" and f"2 {name.title()} headers" in body["message"], body
            single = httpx.Headers([*base, headers[0], ("accept", ACCEPT["accept"])])
            answer = await client.request(method, path, headers=single, json=INIT if method == "POST" else None)
            assert answer.status_code != 400 or answer.json().get("error") != "duplicate_header"

    run(test)
