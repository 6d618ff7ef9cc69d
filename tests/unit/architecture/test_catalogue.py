"""Every door against the catalogue of operations (``lyra/models/catalogue.py``), without Neo4j.

The MCP tools are built from the catalogue; the REST routes and the CLI commands are written by hand and checked
here: an operation missing from a door it should have, a route or a tool the catalogue does not know, or a door
that disagrees with its entry (method, path, status code, annotations, the Operations method it calls) fails with
a message naming the operation and the door.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from typing import Any
from unittest.mock import MagicMock

import anyio
import pytest
import typer
from fastapi import FastAPI
from fastapi.routing import APIRoute

from lyra.api.app import MCP_PATH, PREFIX, create_app
from lyra.core.settings import load_settings
from lyra.mcp.server import create_mcp_server
from lyra.models.catalogue import OPERATION_BY_NAME, OPERATIONS, Operation, Rest
from lyra.services.operations import Operations

# Routes that are no operation: the service's own (health, the OpenAPI documents), the report page (a person's
# view of get_materials, `lyra report` on the CLI) and the MCP endpoint.
INFRASTRUCTURE_ROUTES = {
    ("GET", "/healthz"),
    ("GET", "/tasks/{task_id}/report"),
    ("GET", "/openapi.json"),
    ("GET", "/docs"),
    ("GET", "/docs/oauth2-redirect"),
    ("GET", "/redoc"),
}
# Operations methods that are no operation of their own: helpers behind a door that is listed elsewhere.
NOT_OPERATIONS = {
    "learning": "the learning service, for the jobs that run a proposal batch",
    "health": "GET /healthz",
    "task_exists": "the CLI's ingest and demo commands ask before creating a task",
    "get_materials_json": "get_materials streamed as one JSON document (REST without limit, `lyra materials`)",
    "report_html": "the report page and `lyra report`",
    "load_graph": "`lyra graph load` reads a JSON file of the local disk",
    "research": "start_research, then ingest: the CLI's `lyra research --corpus`",
    "generate_proposals": "the proposal batch itself, run by the job queue_proposals (generate_proposals) queues",
}


def _methods(route: Any) -> set[str]:
    return set(getattr(route, "methods", None) or {"GET"}) - {"HEAD", "OPTIONS"}


@pytest.fixture(scope="module")
def app() -> FastAPI:
    ops = MagicMock(spec=Operations)
    return create_app(ops, load_settings(), mcp_server=create_mcp_server(ops))


def _flat(routes: list[Any]) -> Iterator[Any]:
    """The routes, those of included routers too (FastAPI 0.165 keeps an included router as one entry whose
    ``original_router`` holds its routes, their paths already prefixed)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        yield from _flat(included.routes) if included is not None else [route]


def rest_routes(app: FastAPI) -> dict[tuple[str, str], Any]:
    routes: dict[tuple[str, str], Any] = {}
    for route in _flat(app.routes):
        for method in _methods(route):
            routes[(method, getattr(route, "path", ""))] = route
    return routes


def cli_commands() -> Iterator[tuple[str, Any]]:
    """(the words after `lyra`, the click command) for every command of the CLI, in groups too."""
    from lyra.cli import app

    def walk(command: Any, words: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
        if hasattr(command, "commands"):  # a group (typer ships its own click: no isinstance check)
            for name, sub in command.commands.items():
                yield from walk(sub, (*words, name))
        else:
            yield " ".join(words), command

    yield from walk(typer.main.get_command(app), ())


def calls(source: str, method: str) -> bool:
    return re.search(rf"\b(?:ops|operations)\.{method}\(", source) is not None


# ----------------------------------------------------------------------------------------------------- the table
def test_every_operation_names_an_operations_method_with_its_request_and_response() -> None:
    for operation in OPERATIONS:
        method = getattr(Operations, operation.method, None)
        assert callable(method), f"{operation.name}: Operations has no method {operation.method}"
        hints = inspect.get_annotations(method, eval_str=True)
        assert hints["return"] is operation.response, f"{operation.name}: {operation.method} returns {hints['return']}"
        if operation.takes_request:
            assert hints["request"] is operation.request, f"{operation.name}: {operation.method} takes another model"
        else:
            assert not operation.request.model_fields, f"{operation.name}: takes no request but its model has fields"


def test_every_public_operations_method_is_in_the_catalogue_or_a_named_helper() -> None:
    public = {name for name in vars(Operations) if not name.startswith("_")}
    catalogued = {operation.method for operation in OPERATIONS}
    missing = sorted(public - catalogued - set(NOT_OPERATIONS))
    assert not missing, f"Operations methods in no door: {missing}; add them to lyra/models/catalogue.py"
    assert not catalogued & set(NOT_OPERATIONS)


def test_an_operation_off_a_door_says_why() -> None:
    with pytest.raises(ValueError, match="rest needs either a door or a reason"):
        Operation(
            name="x", title="x", description="x", request=MagicMock, response=MagicMock, method="x",
            read_only=True, rest=None, cli="x",
        )  # fmt: skip
    with pytest.raises(ValueError, match="mcp needs either"):
        Operation(
            name="x", title="x", description="x", request=MagicMock, response=MagicMock, method="x",
            read_only=True, mcp=False, rest=Rest("GET", "/x"), cli="x",
        )  # fmt: skip


# ----------------------------------------------------------------------------------------------------- MCP
def test_every_mcp_operation_is_a_tool_with_its_annotations_and_no_other_tool_is() -> None:
    server = create_mcp_server(MagicMock(spec=Operations))
    tools = {tool.name: tool for tool in anyio.run(server.list_tools)}
    expected = {operation.name for operation in OPERATIONS if operation.mcp}
    assert not expected - set(tools), f"MCP door: operations without a tool: {sorted(expected - set(tools))}"
    assert not set(tools) - expected, f"MCP door: tools the catalogue does not know: {sorted(set(tools) - expected)}"
    for name in expected:
        tool, operation = tools[name], OPERATION_BY_NAME[name]
        hints = tool.annotations
        assert hints is not None
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
            operation.read_only,
            operation.destructive,
            operation.idempotent,
        ), f"MCP door: {name}'s annotations differ from the catalogue"
        assert tool.title == operation.title, f"MCP door: {name}'s title"
        assert tool.description and tool.description.startswith(operation.description), f"MCP door: {name}"


# ----------------------------------------------------------------------------------------------------- REST
@pytest.mark.parametrize("operation", [o for o in OPERATIONS if o.rest], ids=lambda o: o.name)
def test_every_rest_operation_has_exactly_its_route(app: FastAPI, operation: Operation) -> None:
    assert operation.rest is not None
    key = (operation.rest.method, PREFIX + operation.rest.path)
    route = rest_routes(app).get(key)
    assert route is not None, f"REST door: {operation.name} has no route {key[0]} {key[1]}"
    assert isinstance(route, APIRoute)
    assert route.status_code in (None, operation.rest.status_code) and (route.status_code or 200) == (
        operation.rest.status_code
    ), f"REST door: {operation.name} answers {route.status_code}, the catalogue says {operation.rest.status_code}"
    assert route.tags == [operation.rest.tag], f"REST door: {operation.name}'s tag"
    assert route.response_model is operation.response, f"REST door: {operation.name}'s response model"
    assert calls(inspect.getsource(route.endpoint), operation.method), (
        f"REST door: {key[0]} {key[1]} does not call ops.{operation.method}"
    )


def test_no_route_is_unknown_to_the_catalogue(app: FastAPI) -> None:
    known = {(o.rest.method, PREFIX + o.rest.path) for o in OPERATIONS if o.rest}
    unknown = sorted(
        f"{method} {path}"
        for method, path in rest_routes(app)
        if (method, path) not in known | INFRASTRUCTURE_ROUTES and not path.startswith(MCP_PATH)
    )
    assert not unknown, f"REST door: routes the catalogue does not know: {unknown}"


# ----------------------------------------------------------------------------------------------------- CLI
@pytest.mark.parametrize("operation", [o for o in OPERATIONS if o.cli], ids=lambda o: o.name)
def test_every_cli_operation_is_a_command_that_calls_it(operation: Operation) -> None:
    commands = dict(cli_commands())
    command = commands.get(operation.cli or "")
    assert command is not None, f"CLI door: {operation.name} has no command `lyra {operation.cli}`"
    assert command.callback is not None
    module = inspect.getmodule(command.callback)
    assert module is not None
    assert calls(inspect.getsource(module), operation.method), (
        f"CLI door: `lyra {operation.cli}` ({module.__name__}) never calls ops.{operation.method}"
    )


# REST routes whose parameters are the request model's fields rearranged (checked by their own tests)
REST_PARAMETERS_DIFFER = {
    "get_materials": "options.* are flat query parameters (evidence_limit, include_neutral, ...)",
}


def _body_fields(schema: dict[str, Any], components: dict[str, Any]) -> set[str]:
    variants = schema.get("anyOf", [schema])
    for variant in variants:
        ref = variant.get("$ref")
        if ref:
            return set(components[ref.rsplit("/", 1)[-1]].get("properties", {}))
        if "properties" in variant:
            return set(variant["properties"])
    return set()


@pytest.mark.parametrize(
    "operation", [o for o in OPERATIONS if o.rest and o.name not in REST_PARAMETERS_DIFFER], ids=lambda o: o.name
)
def test_every_rest_route_takes_exactly_its_request_models_fields(app: FastAPI, operation: Operation) -> None:
    assert operation.rest is not None
    openapi = app.openapi()
    spec = openapi["paths"][PREFIX + operation.rest.path][operation.rest.method.lower()]
    names = {parameter["name"] for parameter in spec.get("parameters", [])}
    body = spec.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body is not None:
        names |= _body_fields(body, openapi["components"]["schemas"])
    path_names = set(re.findall(r"\{(\w+)\}", operation.rest.path))
    # a path segment may name a field differently (/jobs/{job_id} is GetJobRequest.id)
    fields = set(operation.request.model_fields)
    renamed = {n for n in path_names if n not in fields}
    assert len(renamed) <= 1 and (not renamed or "id" in fields), f"REST door: {operation.name}'s path {renamed}"
    expected = fields - {"id"} | renamed if renamed else fields
    assert names == expected, (
        f"REST door: {operation.name} takes {sorted(names)}, its request model has {sorted(expected)}"
    )
