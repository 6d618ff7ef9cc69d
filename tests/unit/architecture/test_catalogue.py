"""Every door against the catalogue of operations (``lyra/models/catalogue.py``), without Neo4j.

The MCP tools are built from the catalogue, and the REST routes take their method, path, status code and response
model from it; the endpoints and the CLI commands are written by hand. All are checked here, and so are
the docs' tool and REST overviews: an operation missing from a door it should have (or from those pages), a route,
tool or command the catalogue does not know, or a door that disagrees with its entry (method, path, status code,
annotations, description, the Operations method it calls) fails with a message naming the operation and the door.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
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
    "runs_after": "the MCP server's changes watcher: notifications/resources/updated of lyra://tasks/{task_id}/changes",
}


def _methods(route: Any) -> set[str]:
    return set(getattr(route, "methods", None) or {"GET"}) - {"HEAD", "OPTIONS"}


@pytest.fixture(scope="module")
def app() -> FastAPI:
    ops = MagicMock(spec=Operations)
    return create_app(ops, load_settings().api, mcp_server=create_mcp_server(ops))


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
        assert tool.description == operation.description, f"MCP door: {name}'s description is not the catalogue's"


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
# Commands that call operations as steps of something else and are no operation's command (the catalogue's `cli`).
CLI_NOT_OPERATIONS = {
    "demo": "builds the example task: create_task, ingest (and stop_task to rebuild it); offered as `lyra demo`",
}


def command_calls(command: Any) -> set[str]:
    """The Operations methods a command's function calls, itself or through the functions of its module it calls."""
    function = inspect.unwrap(command.callback)
    module = inspect.getmodule(function)
    assert module is not None
    functions = {
        node.name: node
        for node in ast.parse(inspect.getsource(module)).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    methods: set[str] = set()
    seen: set[str] = set()
    todo = [function.__name__]
    while todo:
        name = todo.pop()
        if name in seen or name not in functions:
            continue
        seen.add(name)
        source = ast.unparse(functions[name])
        methods |= set(re.findall(r"\b(?:ops|operations)\.(\w+)\(", source))
        todo += [
            n.func.id for n in ast.walk(functions[name]) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        ]
    return methods


@pytest.mark.parametrize("operation", [o for o in OPERATIONS if o.cli], ids=lambda o: o.name)
def test_every_cli_operation_is_a_command_that_calls_it(operation: Operation) -> None:
    commands = dict(cli_commands())
    command = commands.get(operation.cli or "")
    assert command is not None, f"CLI door: {operation.name} has no command `lyra {operation.cli}`"
    assert command.callback is not None
    assert operation.method in command_calls(command), (
        f"CLI door: `lyra {operation.cli}` never calls ops.{operation.method}"
    )


def commands_the_catalogue_does_not_know(commands: dict[str, Any]) -> list[str]:
    """Commands that call an operation but are no operation's `cli` (nor an alias of one, nor a named exception)."""
    catalogued = {o.method for o in OPERATIONS}
    offered = {o.cli for o in OPERATIONS if o.cli}
    offered_functions = {inspect.unwrap(commands[words].callback) for words in offered if words in commands}
    unknown = []
    for words, command in commands.items():
        if words in offered or words in CLI_NOT_OPERATIONS or command.callback is None:
            continue
        if inspect.unwrap(command.callback) in offered_functions:
            continue  # another name of a catalogued command (`lyra task add-claim`)
        called = sorted(command_calls(command) & catalogued)
        if called:
            unknown.append(f"`lyra {words}` calls {', '.join(called)}")
    return unknown


def test_no_cli_command_offers_an_operation_the_catalogue_does_not_give_it() -> None:
    unknown = commands_the_catalogue_does_not_know(dict(cli_commands()))
    assert not unknown, (
        f"CLI door: commands the catalogue does not know: {unknown}; name the command in the operation's `cli` "
        "(lyra/models/catalogue.py), or in CLI_NOT_OPERATIONS with why it is no operation's command"
    )


def _a_task_status_command() -> None:  # what a new `lyra task status` would look like
    ops = MagicMock(spec=Operations)
    ops.get_status(None)


def test_the_cli_check_sees_a_command_the_catalogue_does_not_know() -> None:
    commands = {**dict(cli_commands()), "task status": SimpleNamespace(callback=_a_task_status_command)}
    assert commands_the_catalogue_does_not_know(commands) == ["`lyra task status` calls get_status"]


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


# ------------------------------------------------------------------------------ the docs' tool and REST overviews
DOCS = Path(__file__).resolve().parents[3] / "docs" / "guides"
TOOLS_PAGE = DOCS / "mcp-clients.md"  # "## The tools": the tool overview
REST_PAGE = DOCS / "rest.md"  # "# REST scripts": the route overview
# routes in the REST overview that are no operation of the catalogue
OVERVIEW_ROUTES_NOT_OPERATIONS = {("GET", "/tasks/{task_id}/report")}


def readme_table(heading: str, page: Path) -> list[tuple[str, str]]:
    """(first cell, second cell) of each row of the tables under ``heading`` of a docs page, up to the next
    heading of the same or a higher level (code blocks skipped)."""
    level = heading.split(" ", 1)[0]
    rows: list[tuple[str, str]] = []
    inside = fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        if line.startswith("#"):
            marks = line.split(" ", 1)[0]
            if inside and set(marks) == {"#"} and len(marks) <= len(level):
                break
            inside = inside or line == heading
            continue
        if inside and line.startswith("| ") and not line.startswith("| ---"):
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
            rows.append((cells[0], cells[1] if len(cells) > 1 else ""))
    assert rows, f"{page.name}: no table under {heading!r}"
    return rows[1:]  # the header row


def test_the_docs_tool_overview_lists_exactly_the_mcp_tools() -> None:
    listed = {name for first, _ in readme_table("## The tools", TOOLS_PAGE) for name in re.findall(r"`(\w+)\(", first)}
    tools = {operation.name for operation in OPERATIONS if operation.mcp}
    assert not tools - listed, f"docs/guides/mcp-clients.md, The tools: MCP tools not listed: {sorted(tools - listed)}"
    assert not listed - tools, (
        f"docs/guides/mcp-clients.md, The tools: tools the catalogue does not offer on MCP: {sorted(listed - tools)}"
    )


def test_the_docs_rest_overview_lists_exactly_the_routes_each_with_its_operation() -> None:
    routes = {(o.rest.method, PREFIX + o.rest.path): o.name for o in OPERATIONS if o.rest}
    listed: set[tuple[str, str]] = set()
    wrong: list[str] = []
    for first, second in readme_table("# REST scripts", REST_PAGE):
        for method, path in re.findall(r"`(GET|POST|PUT|PATCH|DELETE) (/[^`?]*)[^`]*`", first):
            listed.add((method, path))
            name = routes.get((method, path))
            if name is not None and not re.search(rf"\b{name}\b", second):
                wrong.append(f"{method} {path} is {name}")
    missing = sorted(f"{m} {p} ({routes[(m, p)]})" for m, p in set(routes) - listed)
    unknown = sorted(f"{m} {p}" for m, p in listed - set(routes) - OVERVIEW_ROUTES_NOT_OPERATIONS)
    assert not missing, f"docs/guides/rest.md: routes not listed: {missing}"
    assert not unknown, f"docs/guides/rest.md: routes the catalogue does not have: {unknown}"
    assert not wrong, f"docs/guides/rest.md: rows that do not name their route's operation: {wrong}"
