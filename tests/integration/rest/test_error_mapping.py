"""Every class of Lyra's error tree, raised by an operation, reaches REST as its mapped status and MCP as a tool
error, each with the class's code, its message, and no traceback or source path."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from lyra.api.app import STATUS_FOR_ERROR
from lyra.bootstrap import Services, build_http_app
from lyra.core.errors import InvalidInputError, LyraError
from lyra.mcp.server import create_mcp_server
from tests.support.error_tree import error_classes

pytestmark = pytest.mark.neo4j
MESSAGE = "something specific went wrong"


def make(cls: type[LyraError]) -> LyraError:
    if issubclass(cls, InvalidInputError):
        return cls("params.answer", MESSAGE)
    return cls(MESSAGE, hint="try again later")


def rest_answer(services: Services) -> tuple[int, dict[str, Any]]:
    app = build_http_app(services, workers=False, mcp=False)

    async def run() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.get("/api/v1/views")

    response = anyio.run(run)
    return response.status_code, response.json()


def mcp_answer(services: Services) -> tuple[bool, dict[str, Any]]:
    async def run() -> tuple[bool, str]:
        async with Client(create_mcp_server(services.operations)) as client:
            result = await client.call_tool("list_views", {})
            return result.is_error, result.content[0].text  # type: ignore[union-attr]

    is_error, text = anyio.run(run)
    return is_error, json.loads(text[text.index("{") :])


def test_the_status_table_names_every_error_class() -> None:
    assert set(error_classes().values()) == set(STATUS_FOR_ERROR)


@pytest.mark.parametrize("name", sorted(error_classes()))
def test_each_error_class_is_mapped_the_same_way_through_rest_and_mcp(
    graph: Services, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    cls = error_classes()[name]
    error = make(cls)

    def failing() -> Any:
        raise error

    monkeypatch.setattr(graph.operations, "list_views", failing)
    status, body = rest_answer(graph)
    assert status == STATUS_FOR_ERROR[cls]
    assert body["error"] == cls.code and MESSAGE in body["message"]
    is_error, tool_body = mcp_answer(graph)
    assert is_error and tool_body == body
    for text in (json.dumps(body), json.dumps(tool_body)):
        assert "Traceback" not in text and ".py" not in text


def test_an_unexpected_exception_is_a_bare_internal_error_through_both_doors(
    graph: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing() -> Any:
        raise KeyError("/secret/path/module.py")

    monkeypatch.setattr(graph.operations, "list_views", failing)
    status, body = rest_answer(graph)
    is_error, tool_body = mcp_answer(graph)
    assert status == 500 and body["error"] == "internal_error"
    assert is_error and tool_body["error"] == "internal_error"
    assert "/secret/path" not in json.dumps(body) + json.dumps(tool_body)
