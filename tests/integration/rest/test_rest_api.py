"""The REST API through httpx's ASGI transport, over the example graph in the real Neo4j; parity with MCP;
generated bad input from the OpenAPI document (schemathesis) never produces a 5xx."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import Unsatisfiable
from mcp import Client
from pydantic import SecretStr
from schemathesis import GenerationMode

from lyra.bootstrap import Services, build_http_app
from lyra.core.settings import Settings
from lyra.mcp.server import create_mcp_server
from lyra.services.graph_import import load_graph_file

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[3]
TASK = "example_vitamin_d"
BASE = "http://127.0.0.1"
JSON = {"content-type": "application/json"}


@pytest.fixture
def example(graph: Services) -> Services:
    load_graph_file(ROOT / "config/examples/example_graph.json", graph.tasks, graph.evidence)
    return graph


@pytest.fixture
def app(example: Services) -> FastAPI:
    return build_http_app(example, workers=False, mcp=False)


def request(app: FastAPI, method: str, path: str, **kwargs: Any) -> httpx.Response:
    async def run() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client:
            return await client.request(method, path, **kwargs)

    return anyio.run(run)


def test_create_task_queue_and_status_through_rest(app: FastAPI) -> None:
    created = request(
        app, "POST", "/api/v1/tasks", json={"hypothesis": "Tea lowers blood pressure", "config": {"task_id": "tea_bp"}}
    )
    assert created.status_code == 201 and created.json()["task_id"] == "tea_bp"
    queued = request(app, "POST", "/api/v1/tasks/tea_bp/targets", json={"targets": [{"kind": "query", "value": "tea"}]})
    assert queued.status_code == 202 and queued.json()["queued"] == 1
    status = request(app, "GET", "/api/v1/tasks/tea_bp/status", params={"detail": "full"})
    assert status.status_code == 200 and status.json()["jobs"]["queued"] == 1
    listed = request(app, "GET", "/api/v1/tasks").json()["tasks"]
    assert {t["id"] for t in listed} == {"tea_bp", TASK}
    stopped = request(app, "POST", "/api/v1/tasks/tea_bp/stop", json={"mode": "immediate"})
    assert stopped.status_code == 200 and stopped.json()["cancelled_jobs"] == 1 and stopped.json()["resumable"]


def test_create_task_through_rest_holds_a_repeated_claim_once(app: FastAPI, example: Services) -> None:
    body = {"hypothesis": "Tea lowers blood pressure", "config": {"task_id": "tea_twice", "claims": ["X is Y"] * 2}}
    created = request(app, "POST", "/api/v1/tasks", json=body)
    assert created.status_code == 201, created.text
    assert len(created.json()["claim_ids"]) == 2 and created.json()["duplicates_ignored"] == ["X is Y"]
    texts = [r["text"] for r in example.store.run("tasks/task_claims", {"task_id": "tea_twice"})]
    assert sorted(texts) == ["Tea lowers blood pressure", "X is Y"]


def test_add_claims_through_rest_returns_the_claim_the_task_holds(app: FastAPI) -> None:
    claims = {"claims": ["Vitamin D lowers blood pressure", "vitamin d lowers blood pressure."]}
    added = request(app, "POST", f"/api/v1/tasks/{TASK}/claims", json=claims)
    assert added.status_code == 200, added.text
    body = added.json()
    assert (body["created"], body["existing"]) == (1, 1) and body["claims"][0]["claim_id"] == body["claims"][1][
        "claim_id"
    ]
    again = request(app, "POST", f"/api/v1/tasks/{TASK}/claims", json={"claims": ["VITAMIN D LOWERS BLOOD PRESSURE!"]})
    assert again.json()["claims"][0] == {**body["claims"][0], "created": False}
    missing = request(app, "POST", "/api/v1/tasks/no_such_task/claims", json={"claims": ["x"]})
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    empty = request(app, "POST", f"/api/v1/tasks/{TASK}/claims", json={"claims": ["ok", ""]})
    assert empty.status_code == 422 and empty.json()["field"] == "claims[1]"


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "code", "field"),
    [
        ("POST", "/api/v1/tasks", {"json": {"hypothesis": "x", "extra": 1}}, 422, "extra"),
        ("POST", "/api/v1/tasks", {"json": {"hypothesis": ""}}, 422, "hypothesis"),
        (
            "POST",
            "/api/v1/tasks",
            {"content": b"{not json", "headers": {"content-type": "application/json"}},
            422,
            None,
        ),
        ("GET", f"/api/v1/tasks/{TASK}/status", {"params": {"wait": "400"}}, 422, "wait"),
        ("GET", f"/api/v1/tasks/{TASK}/status", {"params": {"colour": "red"}}, 422, "colour"),
        ("GET", "/api/v1/tasks/Bad-Id/materials", {}, 422, "task_id"),
        ("GET", "/api/v1/tasks/no_such_task/materials", {}, 404, None),
        (
            "POST",
            f"/api/v1/tasks/{TASK}/targets",
            {"json": {"targets": [{"kind": "ftp", "value": "x"}]}},
            422,
            "targets[0].kind",
        ),
        (
            "POST",
            f"/api/v1/tasks/{TASK}/targets",
            {"json": {"targets": [{"kind": "file", "value": "/etc/passwd"}]}},
            422,
            "targets[0].value",
        ),
        ("POST", "/api/v1/graph/query", {"json": {"cypher": "CREATE (n:X) RETURN n"}}, 403, "cypher"),
        ("POST", "/api/v1/graph/query", {"json": {"cypher": "MATCH (n RETURN n"}}, 422, "cypher"),
        ("POST", "/api/v1/views/no_such_view", {"json": {"params": {}}}, 404, None),
        (
            "POST",
            "/api/v1/tasks",
            {"content": b"x" * 2_000_000, "headers": {"content-type": "application/json"}},
            413,
            "body",
        ),
        # client faults that used to be a 500 or FastAPI's {"detail": ...}
        ("POST", "/api/v1/tasks", {"content": b'{"hypothesis": "\xff\xfe"}', "headers": JSON}, 422, "body"),
        ("POST", "/api/v1/tasks", {"content": b'{"hypothesis": "\\ud800"}', "headers": JSON}, 422, "hypothesis"),
        ("POST", "/api/v1/tasks", {"json": {"hypothesis": "\u0000"}}, 422, "hypothesis"),
        (
            "POST",
            "/api/v1/tasks",
            {"json": {"hypothesis": "x", "config": {"claims": ["a\u0007b"]}}},
            422,
            "config.claims[0]",
        ),
        (
            "POST",
            "/api/v1/graph/query",
            {"content": b'{"cypher": "RETURN $x AS x", "params": {"x": ["\\ud800"]}}', "headers": JSON},
            422,
            "params.x[0]",
        ),
        (
            "POST",
            "/api/v1/graph/query",
            {"content": b'{"cypher": "RETURN 1 AS x", "params": {"\\udfff": 1}}', "headers": JSON},
            422,
            "params.\\udfff",
        ),
        (
            "POST",
            f"/api/v1/tasks/{TASK}/feedback",
            {"json": {"action": "claim_reject", "args": {"claim_id": "c\u0000", "reason": "r"}}},
            422,
            "args.claim_id",
        ),
        ("GET", "/api/v1/domains/*", {}, 422, "domain"),
        ("GET", "/api/v1/domains/exa mple.org", {}, 422, "domain"),
        ("GET", "/api/v1/no_such_route", {}, 404, None),
        ("DELETE", "/api/v1/tasks", {}, 405, None),
    ],
)
def test_bad_requests_get_a_specific_json_error(
    app: FastAPI, method: str, path: str, kwargs: dict[str, Any], code: int, field: str | None
) -> None:
    response = request(app, method, path, **kwargs)
    assert response.status_code == code, response.text
    body = response.json()
    assert body["error"] and body["message"] and "Traceback" not in response.text
    if field:
        assert body["field"] == field
    assert request(app, "GET", "/api/v1/tasks").json()["tasks"][0]["id"] == TASK  # nothing was written


def test_materials_graph_views_and_report(app: FastAPI) -> None:
    materials = request(app, "GET", f"/api/v1/tasks/{TASK}/materials", params={"evidence_limit": 1})
    claims = materials.json()["claims"]
    assert len(claims) == 3 and all(len(c["evidence"]) <= 1 for c in claims)
    assert any(c["evidence_truncated"] for c in claims)
    graph = request(app, "GET", f"/api/v1/tasks/{TASK}/graph").json()
    assert graph["nodes"] and graph["edges"]
    assert request(app, "GET", "/api/v1/views").json()["views"]
    view = request(app, "POST", "/api/v1/views/domain_statistics", json={"params": {"task_id": TASK}})
    assert view.status_code == 200 and view.json()["rows"]
    page = request(app, "GET", f"/tasks/{TASK}/report")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "Vitamin D supplementation reduces" in page.text


def test_feedback_and_check_domain_over_rest(app: FastAPI) -> None:
    out = request(
        app,
        "POST",
        f"/api/v1/tasks/{TASK}/feedback",
        json={"action": "domain_block", "args": {"domain_pattern": "journals.example.org", "reason": "test"}},
    )
    assert out.status_code == 200, out.text
    decision = request(app, "GET", "/api/v1/domains/journals.example.org").json()
    assert decision["allowed"] is False and decision["domain_block_reason"] == "manual"
    bad = request(
        app, "POST", f"/api/v1/tasks/{TASK}/feedback", json={"action": "domain_block", "args": {"domain_pattern": "*"}}
    )
    assert bad.status_code == 422 and bad.json()["field"].startswith("args.")
    calib = request(app, "POST", "/api/v1/calibration", json={"action": "get_stats"})
    assert calib.status_code == 200 and calib.json()["result"]["samples"] == 0


def test_openapi_document_lists_the_routes(app: FastAPI) -> None:
    spec = request(app, "GET", "/openapi.json").json()
    assert {
        "/api/v1/tasks",
        "/api/v1/tasks/{task_id}/targets",
        "/api/v1/tasks/{task_id}/claims",
        "/api/v1/tasks/{task_id}/status",
        "/api/v1/tasks/{task_id}/stop",
        "/api/v1/tasks/{task_id}/auth-queue",
        "/api/v1/tasks/{task_id}/auth-queue/{intervention_id}/resolve",
        "/api/v1/tasks/{task_id}/materials",
        "/api/v1/tasks/{task_id}/graph",
        "/api/v1/views",
        "/api/v1/views/{name}",
        "/api/v1/graph/query",
        "/api/v1/search",
    } <= set(spec["paths"])
    assert request(app, "GET", "/docs").status_code == 200


def test_mcp_and_rest_give_identical_materials(example: Services, app: FastAPI) -> None:
    async def via_mcp() -> Any:
        async with Client(create_mcp_server(example.operations)) as client:
            return (await client.call_tool("get_materials", {"task_id": TASK})).structured_content

    mcp_out = anyio.run(via_mcp)
    rest_out = request(app, "GET", f"/api/v1/tasks/{TASK}/materials").json()
    mcp_out.pop("computed_at"), rest_out.pop("computed_at")
    assert json.dumps(mcp_out, sort_keys=True) == json.dumps(rest_out, sort_keys=True)


# ----------------------------------------------------------------------------- guards
@pytest.fixture
def guarded(example: Services, settings: Settings) -> Iterator[FastAPI]:
    original = example.settings
    example.settings = settings.model_copy(
        update={"api_token": SecretStr("s3cret-token-0123456789"), "api_allowed_origins": ["https://notebook.example"]}
    )
    try:
        yield build_http_app(example, workers=False, mcp=False)
    finally:
        example.settings = original


def test_the_bearer_scheme_is_case_insensitive_and_the_token_is_not(guarded: FastAPI) -> None:
    for scheme in ("bearer", "BEARER", "Bearer"):
        answer = request(
            guarded, "GET", "/api/v1/tasks", headers={"authorization": f"{scheme} s3cret-token-0123456789"}
        )
        assert answer.status_code == 200, scheme
    wrong = request(guarded, "GET", "/api/v1/tasks", headers={"authorization": "bearer S3CRET-TOKEN-0123456789"})
    assert wrong.status_code == 401 and wrong.json()["error"] == "unauthorized"


def test_a_preflight_from_a_configured_origin_is_answered_before_the_token_check(guarded: FastAPI) -> None:
    preflight = request(
        guarded,
        "OPTIONS",
        "/api/v1/tasks",
        headers={
            "origin": "https://notebook.example",
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, content-type",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://notebook.example"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
    actual = request(
        guarded,
        "GET",
        "/api/v1/tasks",
        headers={"origin": "https://notebook.example", "authorization": "Bearer s3cret-token-0123456789"},
    )
    assert actual.status_code == 200 and actual.headers["access-control-allow-origin"] == "https://notebook.example"


def test_other_origins_get_no_cross_origin_access_by_default(app: FastAPI) -> None:
    for origin in ("http://localhost:3000", "http://127.0.0.1:9999", "https://notebook.example", "null"):
        preflight = request(
            app, "OPTIONS", "/api/v1/tasks", headers={"origin": origin, "access-control-request-method": "POST"}
        )
        assert preflight.status_code == 403 and preflight.json()["error"] == "invalid_origin", origin
        assert not any(h.startswith("access-control-") for h in preflight.headers), origin
        assert request(app, "GET", "/api/v1/tasks", headers={"origin": origin}).status_code == 403, origin
    same_origin = request(app, "POST", "/api/v1/tasks", headers={"origin": BASE}, json={"hypothesis": "Same origin"})
    assert same_origin.status_code == 201


def test_token_host_and_origin_guards(guarded: FastAPI) -> None:
    assert request(guarded, "GET", "/api/v1/tasks").status_code == 401
    auth = {"authorization": "Bearer s3cret-token-0123456789"}
    assert request(guarded, "GET", "/api/v1/tasks", headers=auth).status_code == 200
    assert request(guarded, "GET", "/api/v1/tasks", headers={"authorization": "Bearer nope"}).status_code == 401
    rebinding = request(guarded, "GET", "/api/v1/tasks", headers={**auth, "host": "evil.example"})
    assert rebinding.status_code == 400 and rebinding.json()["error"] == "invalid_host"
    foreign = request(guarded, "GET", "/api/v1/tasks", headers={**auth, "origin": "https://evil.example"})
    assert foreign.status_code == 403
    allowed = request(guarded, "GET", "/api/v1/tasks", headers={**auth, "origin": "https://notebook.example"})
    assert allowed.status_code == 200


# ----------------------------------------------------------------------------- generated input
@pytest.fixture
def fuzz_app(example: Services) -> FastAPI:
    return build_http_app(example, workers=False, mcp=False)


def test_generated_requests_never_cause_a_server_error(fuzz_app: FastAPI) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", fuzz_app, headers={"host": "127.0.0.1"})
    schema.config.generation.update(max_examples=15)
    operations = [
        op.ok()
        for op in schema.get_all_operations()
        # /search needs the embedding model (covered in test_servers_e2e.py); a stance guideline proposed by a reviewer
        # is measured with the LLM before anyone reviews it, minutes per call here (covered in test_learning.py)
        if op.ok().path not in ("/api/v1/search", "/api/v1/learning/rules/propose")
    ]
    assert len(operations) >= 10
    failures: list[str] = []
    strategies = [
        operation.as_strategy(generation_mode=mode)
        for operation in operations
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    ]
    ran = 0
    for strategy in strategies:

        @given(case=strategy)
        @hypothesis_settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case: Any) -> None:
            response = case.call(headers={"host": "127.0.0.1"})
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:200]}")

        try:
            check()
        except Unsatisfiable:
            continue  # e.g. no negative input exists for a route without parameters
        ran += 1
    assert ran >= 15 and not failures, failures
