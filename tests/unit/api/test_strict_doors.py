"""REST and MCP validate every integer, boolean and number argument of every operation alike, strictly: ``true`` is
not an integer, ``"7"`` is not a number, ``7.0`` is not an integer, ``1`` is not a boolean.

Generic: the fields come from the published schemas (the OpenAPI document's request bodies and query parameters,
each MCP tool's input schema), nested objects and arrays included. Each route and tool first gets a valid request
(built from its schema), which must reach the operation; then each scalar field in turn gets each wrong value,
which must be refused (422 / tool error ``invalid_input``) naming that field, before any operation runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from lyra.api.app import create_app
from lyra.core.settings import load_settings
from lyra.mcp.server import create_mcp_server
from tests.support.stub_operations import StubOperations

WRONG: dict[str, list[Any]] = {
    "integer": [True, "7", 7.0, 7.5],
    "boolean": ["true", 1, 0, "false"],
    "number": [True, "7.5"],
}
QUERY_WRONG: dict[str, list[str]] = {  # a query parameter is text: only its exact written form is taken
    "integer": ["true", "7.0", " 7", "1_0", "0x10"],
    "boolean": ["1", "yes", "on", "TRUE"],
    "number": ["true", "nan", "1_0"],
}
# values a generated sample cannot guess (patterns, enums of a dict-typed field, cross-field rules)
OVERRIDES: dict[str, Any] = {
    "task_id": "example_task",
    "intervention_id": "iv_" + "5" * 32,
    "domain": "example.org",
    "cypher": "RETURN 1 AS x",
    "args": {},
    "hypothesis": "Tea lowers blood pressure",
    "claims": ["Tea lowers blood pressure"],
    "component": "stance",
}
PATH_VALUES = {
    "task_id": "example_task",
    "intervention_id": "iv_" + "5" * 32,
    "name": "claim_evidence_summary",
    "job_id": "job_x",
    "domain": "example.org",
    "proposal_id": "prp_x",
    "record_id": "fbr_x",
    "rule_id": "lrl_x",
    "claim_id": "clm_x",
}


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _branches(schema: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    schema = _resolve(schema, root)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return [_resolve(option, root) for option in options if option.get("type") != "null"]
    return [schema]


def sample(schema: dict[str, Any], root: dict[str, Any], name: str = "") -> Any:
    """A valid value for a schema (required properties only)."""
    schema = _branches(schema, root)[0]
    if name in OVERRIDES and "enum" not in schema:
        return OVERRIDES[name]
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {key: sample(props[key], root, key) for key in schema.get("required", [])}
    if kind == "array":
        return [sample(schema["items"], root)] * schema.get("minItems", 0)
    if kind == "integer":
        return max(1, schema.get("minimum", 1))
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return False
    prefixed_id = re.fullmatch(r"\^(\w+_)\[0-9a-f\]\{(\d+)\}\$", schema.get("pattern", ""))
    if prefixed_id:  # an id such as job_<32 hex digits>
        return prefixed_id.group(1) + "5" * int(prefixed_id.group(2))
    if schema.get("pattern") == "^[a-z]{3}_[A-Za-z0-9_-]+$":
        return "prp_x"
    return "x" * max(1, schema.get("minLength", 1))


def scalar_fields(schema: dict[str, Any], root: dict[str, Any], path: str = "") -> Iterator[tuple[str, str, Any]]:
    """(field path, JSON type, the sampled container to put it in) for every integer/boolean/number field."""
    for branch in _branches(schema, root):
        kind = branch.get("type")
        if kind in WRONG and path:
            yield path, kind, None
        elif kind == "object":
            for key, prop in branch.get("properties", {}).items():
                yield from scalar_fields(prop, root, f"{path}.{key}" if path else key)
        elif kind == "array" and "items" in branch:
            yield from scalar_fields(branch["items"], root, f"{path}[0]")


def set_path(body: dict[str, Any], path: str, value: Any, schema: dict[str, Any], root: dict[str, Any]) -> None:
    """Put ``value`` at ``path`` (a.b[0].c), creating the objects and arrays on the way as valid samples."""
    parts = re.findall(r"[^.\[\]]+|\[0\]", path)
    node: Any = body
    current = schema
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        branch = next(b for b in _branches(current, root) if b.get("type") in ("object", "array"))
        if part == "[0]":
            current = branch["items"]
            if not node:
                node.append(sample(current, root))
            if last:
                node[0] = value
            node = node[0]
            continue
        current = branch["properties"][part]
        if last:
            node[part] = value
        else:
            if not isinstance(node.get(part), dict | list):
                kinds = [b.get("type") for b in _branches(current, root)]
                node[part] = [] if "array" in kinds and "object" not in kinds else sample(current, root, part)
                if isinstance(node[part], dict) and "object" not in kinds:
                    node[part] = []
            node = node[part]


# ----------------------------------------------------------------------------------------------------- REST
@pytest.fixture(scope="module")
def rest() -> tuple[Any, StubOperations, dict[str, Any]]:
    ops = StubOperations()
    app = create_app(ops, load_settings().api)  # type: ignore[arg-type]
    return app, ops, app.openapi()


def send(app: Any, method: str, path: str, **kwargs: Any) -> httpx.Response:
    async def run() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.request(method, path, **kwargs)

    return anyio.run(run)


def rest_operations(openapi: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in openapi["paths"].items():
        for method, operation in methods.items():
            yield method.upper(), re.sub(r"\{(\w+)\}", lambda m: PATH_VALUES[m.group(1)], path), operation


def _body_schema(operation: dict[str, Any]) -> dict[str, Any] | None:
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    return None if content is None else dict(content["schema"])


def test_every_rest_scalar_field_is_strict(rest: tuple[Any, StubOperations, dict[str, Any]]) -> None:
    app, ops, openapi = rest
    checked = 0
    for method, path, operation in rest_operations(openapi):
        body_schema = _body_schema(operation)
        if body_schema is not None:
            base = sample(body_schema, openapi)
            ops.calls.clear()
            answer = send(app, method, path, json=base)
            assert ops.calls, f"{method} {path}: the valid sample {base} did not reach the operation: {answer.text}"
            for field, kind, _ in scalar_fields(body_schema, openapi):
                for wrong in WRONG[kind]:
                    body = json.loads(json.dumps(base))
                    set_path(body, field, wrong, body_schema, openapi)
                    ops.calls.clear()
                    answer = send(app, method, path, json=body)
                    where = f"{method} {path} {field}={wrong!r}"
                    assert answer.status_code == 422, f"{where}: {answer.status_code} {answer.text}"
                    assert answer.json()["field"] == field, f"{where}: {answer.text}"
                    assert not ops.calls, where
                    checked += 1
        parameters = [p for p in operation.get("parameters", []) if p["in"] == "query"]
        base_query = {p["name"]: str(sample(p["schema"], openapi, p["name"])) for p in parameters if p.get("required")}
        for parameter in parameters:
            kinds = [b.get("type") for b in _branches(parameter["schema"], openapi)]
            kind = next((k for k in kinds if k in QUERY_WRONG), None)
            if parameter["in"] != "query" or kind is None:
                continue
            for wrong in QUERY_WRONG[kind]:
                ops.calls.clear()
                answer = send(app, method, path, params={**base_query, parameter["name"]: wrong})
                where = f"{method} {path}?{parameter['name']}={wrong!r}"
                assert answer.status_code == 422, f"{where}: {answer.status_code} {answer.text}"
                assert answer.json()["field"] == parameter["name"], f"{where}: {answer.text}"
                assert not ops.calls, where
                checked += 1
    assert checked > 100, checked


def test_rest_query_parameters_take_their_exact_written_form(rest: tuple[Any, StubOperations, dict[str, Any]]) -> None:
    app, ops, _ = rest
    for query in ({"wait": "5", "detail": "full"}, {"wait": "0"}):
        ops.calls.clear()
        answer = send(app, "GET", "/api/v1/tasks/example_task/status", params=query)
        assert answer.status_code == 409 and ops.calls == ["get_status"], answer.text
    ops.calls.clear()
    answer = send(app, "GET", "/api/v1/learning/rules", params={"include_retired": "true"})
    assert answer.status_code == 409 and ops.calls == ["list_rules"], answer.text


def test_rest_refuses_what_the_tester_sent(rest: tuple[Any, StubOperations, dict[str, Any]]) -> None:
    """config.max_pages true / "7" / 7.0 was stored by REST and refused by MCP."""
    app, ops, _ = rest
    for wrong in (True, "7", 7.0):
        ops.calls.clear()
        answer = send(app, "POST", "/api/v1/tasks", json={"hypothesis": "Tea helps", "config": {"max_pages": wrong}})
        assert answer.status_code == 422 and answer.json()["field"] == "config.max_pages", answer.text
        assert "integer" in answer.json()["message"] and not ops.calls
    answer = send(app, "POST", "/api/v1/tasks", json={"hypothesis": "Tea helps", "config": {"max_seconds": 7}})
    assert answer.status_code == 409 and ops.calls == ["create_task"]  # a number field takes an integer


# ----------------------------------------------------------------------------------------------------- MCP
def test_every_mcp_scalar_argument_is_strict() -> None:
    ops = StubOperations()
    server = create_mcp_server(ops)  # type: ignore[arg-type]

    async def run() -> int:
        checked = 0
        async with Client(server) as client:
            for tool in (await client.list_tools()).tools:
                schema = tool.input_schema
                base = sample(schema, schema)
                ops.calls.clear()
                result = await client.call_tool(tool.name, base)
                text = " ".join(getattr(c, "text", "") for c in result.content)
                assert ops.calls, f"{tool.name}: the valid sample {base} did not reach the operation: {text}"
                for field, kind, _ in scalar_fields(schema, schema):
                    for wrong in WRONG[kind]:
                        arguments = json.loads(json.dumps(base))
                        set_path(arguments, field, wrong, schema, schema)
                        ops.calls.clear()
                        result = await client.call_tool(tool.name, arguments)
                        text = " ".join(getattr(c, "text", "") for c in result.content)
                        where = f"{tool.name} {field}={wrong!r}"
                        assert result.is_error, f"{where}: accepted"
                        error = json.loads(text[text.index("{") :])
                        assert (error["error"], error["field"]) == ("invalid_input", field), f"{where}: {text}"
                        assert not ops.calls, where
                        checked += 1
        return checked

    assert anyio.run(run) > 80


# ----------------------------------------------------------------------------------------------------- list arguments
def test_optional_arguments_are_published_with_one_plain_type() -> None:
    """`list[str] | None` was an anyOf, which the MCP Inspector CLI sends as a string."""

    async def run() -> list[Any]:
        async with Client(create_mcp_server(StubOperations())) as client:  # type: ignore[arg-type]
            return (await client.list_tools()).tools

    for tool in anyio.run(run):
        for name, prop in tool.input_schema["properties"].items():
            nullable = [v for v in prop.get("anyOf", []) if v.get("type") == "null"]
            assert not nullable, f"{tool.name}.{name}: {prop}"
        if tool.name == "queue_reference_candidates":
            assert tool.input_schema["properties"]["include_ids"]["type"] == "array"


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("queue_reference_candidates", {"task_id": "example_task"}, "include_ids"),
        ("queue_reference_candidates", {"task_id": "example_task"}, "exclude_ids"),
        ("add_claims", {"task_id": "example_task"}, "claims"),
    ],
)
def test_a_list_argument_is_taken_as_a_list_or_as_its_json_text(
    tool: str, arguments: dict[str, Any], field: str
) -> None:
    values = ["pg_x", "pg_y"] if field != "claims" else ["Tea calms", "Coffee wakes"]
    ops = StubOperations()

    async def call(value: Any) -> str:
        async with Client(create_mcp_server(ops)) as client:  # type: ignore[arg-type]
            result = await client.call_tool(tool, {**arguments, field: value})
            return " ".join(getattr(c, "text", "") for c in result.content)

    for value in (values, json.dumps(values), " " + json.dumps(values)):
        ops.requests.clear()
        text = anyio.run(call, value)
        assert "reached" in text and [getattr(r, field) for r in ops.requests] == [values], text
    for value in ("pg_x", "[pg_x", '{"a": 1}', '["pg_x"'):
        ops.requests.clear()
        text = anyio.run(call, value)
        error = json.loads(text[text.index("{") :])
        assert (error["error"], error["field"]) == ("invalid_input", field) and "list" in error["message"], text
        assert not ops.requests
    # the REST door takes the same forms (the same request model)
    app = create_app(ops, load_settings().api)  # type: ignore[arg-type]
    route = {"queue_reference_candidates": "reference-candidates", "add_claims": "claims"}[tool]
    for value in (values, json.dumps(values)):
        ops.requests.clear()
        answer = send(app, "POST", f"/api/v1/tasks/example_task/{route}", json={field: value})
        assert answer.status_code == 409 and [getattr(r, field) for r in ops.requests] == [values], answer.text
