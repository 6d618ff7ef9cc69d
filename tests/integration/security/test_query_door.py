"""The read-only query door (query_graph) against hostile Cypher, on the real Neo4j.

Every entry of tests/data/hostile_cypher.yaml goes through Operations.query_graph and gets its expected outcome
(rows, or a 4xx error naming what was refused); a sample goes through REST and MCP too. After every request the
graph is exactly as before, and an HTTP server the test runs on 127.0.0.1 — the target of every URL in the corpus —
has received no request at all. Then the exact probes of the first security round, Neo4j's own errors for a caller's
query
(timeouts, terminations, syntax, lone surrogates) as 4xx, and the managed server's own hardening.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from neo4j import exceptions as neo4j_errors

from lyra.api.app import status_for
from lyra.bootstrap import Services, build_http_app
from lyra.core.errors import (
    InvalidInputError,
    LyraError,
    QueryFailed,
    QueryRefused,
    QuerySyntaxError,
    QueryTimeout,
    ResultTooLarge,
)
from lyra.core.settings import Settings
from lyra.graph.connection import bind_neomodel
from lyra.graph.query_guard import check_plan, server_procedure_allowlist
from lyra.graph.server import managed_instances
from lyra.graph.store import to_plain
from lyra.mcp.server import create_mcp_server
from lyra.models.api import QueryGraphRequest
from lyra.services.graph_import import load_graph_file
from tests.support.hostile_cypher import load_corpus

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[3]
CORPUS: list[dict[str, Any]] = load_corpus()
ERROR_FOR_OUTCOME: dict[str, type[LyraError]] = {
    "refused": QueryRefused,
    "too_large": ResultTooLarge,
    "syntax": QuerySyntaxError,
    "failed": QueryFailed,
}
STATUS_FOR_OUTCOME = {"allowed": 200, "refused": 403, "too_large": 422, "syntax": 422, "failed": 422}
# One or more of every category, through REST and MCP as well.
SAMPLE = [
    "view-contradictions",
    "procedure-db-labels",
    "apoc-coll-sum",
    "line-separator-ends-comment",
    "zero-width-space-inside-name",
    "unicode-escape-closes-a-string",
    "procedure-in-collect-subquery",
    "backtick-quoted-parts",
    "load-csv-browser-port",
    "load-csv-with-headers",
    "apoc-load-json-params-post",
    "apoc-export-json-all-stream",
    "apoc-cypher-run",
    "apoc-periodic-iterate",
    "apoc-util-sleep",
    "show-transactions",
    "terminate-transactions",
    "show-settings",
    "use-system",
    "in-transactions-read",
    "create-node",
    "set-in-scoped-call-subquery",
    "dbms-list-config",
    "apoc-text-repeat-20mb",
    "unbalanced-parenthesis",
    "division-by-zero",
]


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[tuple[str, str]]

    def _record(self) -> None:
        self.hits.append((self.command, self.path))
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"a,b\n1,2\n")

    do_GET = do_POST = do_PUT = do_HEAD = _record

    def log_message(self, *args: Any) -> None:
        pass


@dataclass
class Door:
    services: Services
    base_url: str
    hits: list[tuple[str, str]] = field(default_factory=list)

    def snapshot(self) -> str:
        """Every node and relationship with its labels or type and properties, as one comparable string."""
        driver, db = self.services.store.driver, self.services.store.database
        nodes, _, _ = driver.execute_query(
            "MATCH (n) RETURN elementId(n) AS id, labels(n) AS labels, properties(n) AS props ORDER BY id",
            database_=db,
        )
        rels, _, _ = driver.execute_query(
            "MATCH (a)-[r]->(b) RETURN elementId(r) AS id, type(r) AS type, elementId(a) AS a, elementId(b) AS b, "
            "properties(r) AS props ORDER BY id",
            database_=db,
        )
        rows = [to_plain(r.data()) for r in [*nodes, *rels]]
        return json.dumps(rows, sort_keys=True, default=str)

    def request(self, entry: dict[str, Any]) -> QueryGraphRequest:
        return QueryGraphRequest(
            cypher=entry["cypher"].replace("{http}", self.base_url),
            params=entry.get("params") or {},
            options={"row_limit": entry.get("row_limit", 100)},  # type: ignore[arg-type]
        )


@pytest.fixture(scope="module")
def door(services: Services) -> Iterator[Door]:
    """The example graph (loaded once for the module) and an HTTP server on 127.0.0.1 that counts requests."""
    bind_neomodel(services.store.driver, services.settings)
    services.store.run("admin/wipe_all_data", {"batch_size": 10_000})
    services.store.run("admin/mark_test_database")
    load_graph_file(ROOT / "config/examples/example_graph.json", services.tasks, services.evidence)
    hits: list[tuple[str, str]] = []
    handler = type("Recorder", (_Recorder,), {"hits": hits})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Door(services, f"http://127.0.0.1:{server.server_address[1]}", hits)
    finally:
        server.shutdown()
        server.server_close()


def rest(door: Door, body: dict[str, Any] | bytes) -> httpx.Response:
    app = build_http_app(door.services, workers=False, mcp=False)

    async def run() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            if isinstance(body, bytes):
                return await client.post(
                    "/api/v1/graph/query", content=body, headers={"content-type": "application/json"}
                )
            return await client.post("/api/v1/graph/query", json=body)

    return anyio.run(run)


def mcp(door: Door, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    async def run() -> tuple[bool, dict[str, Any]]:
        async with Client(create_mcp_server(door.services.operations)) as client:
            result = await client.call_tool("query_graph", arguments)
            if result.is_error:
                text = result.content[0].text  # type: ignore[union-attr]
                return True, json.loads(text[text.index("{") :])
            return False, dict(result.structured_content or {})

    return anyio.run(run)


def entry_named(name: str) -> dict[str, Any]:
    (entry,) = [e for e in CORPUS if e["id"] == name]
    return entry


# ----------------------------------------------------------------------------------------------- the corpus
def test_the_corpus_is_large_and_covers_every_category() -> None:
    assert len(CORPUS) >= 100
    assert {e["outcome"] for e in CORPUS} == {"allowed", *ERROR_FOR_OUTCOME}
    assert sum(e["outcome"] == "allowed" for e in CORPUS) >= 30
    assert set(SAMPLE) <= {e["id"] for e in CORPUS}


@pytest.mark.parametrize("entry", CORPUS, ids=[e["id"] for e in CORPUS])
def test_each_corpus_query_gets_its_outcome_and_changes_nothing(door: Door, entry: dict[str, Any]) -> None:
    before = door.snapshot()
    request = door.request(entry)
    if entry["outcome"] == "allowed":
        result = door.services.operations.query_graph(request)
        assert result.row_count == len(result.rows) <= request.options.row_limit
    else:
        expected = ERROR_FOR_OUTCOME[entry["outcome"]]
        with pytest.raises(expected) as info:
            door.services.operations.query_graph(request)
        assert type(info.value) is expected
        assert 400 <= status_for(info.value) < 500
        assert info.value.field in ("cypher", "options.row_limit", "params")
        if "says" in entry:
            assert entry["says"] in info.value.message
    assert door.snapshot() == before
    assert door.hits == []


@pytest.mark.parametrize("entry", [e for e in CORPUS if e.get("plan_also")], ids=lambda e: e["id"])
def test_the_plan_check_alone_refuses_what_hides_from_a_tokenizer(door: Door, entry: dict[str, Any]) -> None:
    cypher = door.request(entry).cypher
    _, plan = door.services.store.explain_adhoc(cypher, {})  # the statement check skipped on purpose
    with pytest.raises(QueryRefused):
        check_plan(plan)


@pytest.mark.parametrize("name", SAMPLE)
def test_a_sample_gets_the_same_outcome_through_rest_and_mcp(door: Door, name: str) -> None:
    entry = entry_named(name)
    before = door.snapshot()
    body = door.request(entry).model_dump()
    response = rest(door, body)
    assert response.status_code == STATUS_FOR_OUTCOME[entry["outcome"]]
    is_error, tool_body = mcp(door, body)
    if entry["outcome"] == "allowed":
        assert not is_error
        assert tool_body["row_count"] == response.json()["row_count"]
    else:
        code = ERROR_FOR_OUTCOME[entry["outcome"]].code
        assert response.json()["error"] == code
        assert is_error and tool_body["error"] == code
        assert tool_body["message"] == response.json()["message"]
    assert door.snapshot() == before
    assert door.hits == []


# ------------------------------------------------------------------------------------- the query door's first probes
def test_show_transactions_does_not_list_another_sessions_query(door: Door) -> None:
    driver, db = door.services.store.driver, door.services.store.database
    with driver.session(database=db) as other, other.begin_transaction() as tx:
        tx.run("RETURN $secret AS s", secret="other client's parameter").consume()
        with pytest.raises(QueryRefused) as info:
            door.services.explore.query_graph("SHOW TRANSACTIONS YIELD currentQuery, parameters RETURN *")
        assert "SHOW" in info.value.message
        tx.rollback()


def test_terminate_transactions_cannot_end_another_clients_transaction(door: Door) -> None:
    driver, db = door.services.store.driver, door.services.store.database
    with driver.session(database=db) as other, other.begin_transaction() as tx:
        tx.run("MATCH (t:Task) RETURN count(t) AS tasks").consume()
        records, _, _ = driver.execute_query(
            "SHOW TRANSACTIONS YIELD transactionId, currentQuery "
            "WHERE currentQuery CONTAINS 'count(t) AS tasks' RETURN transactionId",
            database_=db,
        )
        (victim,) = [r["transactionId"] for r in records]
        for cypher in (f"TERMINATE TRANSACTIONS '{victim}'", f"TERMINATE TRANSACTION '{victim}'"):
            with pytest.raises(QueryRefused):
                door.services.explore.query_graph(cypher)
        assert tx.run("RETURN 1 AS still_alive").single()["still_alive"] == 1  # type: ignore[index]
        tx.commit()


def test_show_settings_and_the_whole_database_export_are_refused(door: Door) -> None:
    for cypher, named in (
        ("SHOW SETTINGS", "SHOW"),
        ("CALL apoc.export.json.all(null,{stream:true})", "apoc.export.json.all"),
    ):
        response = rest(door, {"cypher": cypher})
        assert response.status_code == 403
        assert response.json()["error"] == "query_refused" and named in response.json()["message"]


def test_a_20_mb_string_is_refused_before_it_is_built(door: Door) -> None:
    response = rest(door, {"cypher": "RETURN apoc.text.repeat('a', 20000000)"})
    assert response.status_code == 403
    body = response.json()
    assert body["error"] == "query_refused" and "20,000,000 elements" in body["message"]


def test_a_first_row_over_the_byte_budget_is_stopped_not_returned(door: Door) -> None:
    response = rest(door, {"cypher": "UNWIND range(1, 2000000) AS i RETURN collect(i) AS numbers"})
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "result_too_large" and body["field"] == "cypher"
    assert len(response.content) < 2_000


def test_load_csv_from_the_browser_port_is_refused(door: Door) -> None:
    with pytest.raises(QueryRefused) as info:
        door.services.explore.query_graph("LOAD CSV FROM 'http://127.0.0.1:7474/' AS r RETURN r")
    assert "LOAD CSV" in info.value.message


def test_apoc_load_json_params_cannot_post_to_a_local_server(door: Door) -> None:
    tasks_before = door.services.tasks.list_tasks()
    cypher = (
        f"CALL apoc.load.jsonParams('{door.base_url}/api/v1/tasks',{{method:'POST'}},"
        '\'{"hypothesis": "pwned"}\') YIELD value RETURN value'
    )
    with pytest.raises(QueryRefused) as info:
        door.services.explore.query_graph(cypher)
    assert "apoc.load.jsonParams" in info.value.message
    assert door.hits == []
    assert door.services.tasks.list_tasks() == tasks_before


# ----------------------------------------------------------------------------------------------- Neo4j's errors as 4xx
SLOW = "UNWIND range(1, 2000000000) AS x WITH x WHERE x = -1 RETURN count(*) AS never /* lyra-slow-probe */"


def test_a_query_past_its_timeout_is_a_4xx_query_timeout(door: Door, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(door.services.explore, "query_timeout", 1.0)
    started = time.monotonic()
    response = rest(door, {"cypher": SLOW})
    assert response.status_code == 422
    assert response.json()["error"] == "query_timeout" and "1s limit" in response.json()["message"]
    assert time.monotonic() - started < 30


def test_a_query_terminated_by_someone_else_is_a_4xx_query_timeout(door: Door) -> None:
    driver, db = door.services.store.driver, door.services.store.database
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            door.services.explore.query_graph(SLOW)
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    victim: list[str] = []
    deadline = time.monotonic() + 20
    while not victim and time.monotonic() < deadline:
        records, _, _ = driver.execute_query(
            "SHOW TRANSACTIONS YIELD transactionId, currentQuery "
            "WHERE currentQuery STARTS WITH 'UNWIND' AND currentQuery CONTAINS 'lyra-slow-probe' "
            "RETURN transactionId",
            database_=db,
        )
        victim = [r["transactionId"] for r in records]
        time.sleep(0.1)
    assert victim, "the slow query never showed up"
    driver.execute_query(f"TERMINATE TRANSACTIONS '{victim[0]}'", database_=db)
    worker.join(timeout=30)
    (error,) = outcome
    assert isinstance(error, QueryTimeout) and "terminated" in error.message
    assert 400 <= status_for(error) < 500


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"x": "\ud800"}, "params.x"),
        ({"x": ["ok", {"deep": "bad \udfff end"}]}, "params.x[1].deep"),
        ({"x": {"\ud83d": 1}}, "params.x (a key)"),
        ({"\ud800": 1}, "params.\\ud800"),
    ],
)
def test_a_lone_surrogate_in_params_is_refused_with_its_path(door: Door, params: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        door.services.operations.query_graph(QueryGraphRequest(cypher="RETURN $x AS x", params=params))
    assert info.value.field == field and ("surrogate" in info.value.message or "parameter name" in info.value.message)
    raw = json.dumps({"cypher": "RETURN $x AS x", "params": params}).encode("ascii")  # \udxxx escapes
    response = rest(door, raw)
    assert response.status_code == 422
    assert response.json()["field"] == field


def test_a_lone_surrogate_in_the_cypher_is_refused(door: Door) -> None:
    with pytest.raises(InvalidInputError) as info:
        door.services.explore.query_graph("RETURN '\ud800' AS x")
    assert info.value.field == "cypher" and "surrogate" in info.value.message
    response = rest(door, json.dumps({"cypher": "RETURN '\ud800' AS x"}).encode("ascii"))
    assert response.status_code == 422 and response.json()["field"] == "cypher"


def test_an_integer_beyond_64_bits_is_refused_before_it_is_sent(door: Door) -> None:
    response = rest(door, {"cypher": "RETURN $n AS n", "params": {"n": [1, 2**70]}})
    assert response.status_code == 422
    assert response.json()["field"] == "params.n[1]"


def test_syntax_errors_are_a_4xx_with_a_hint_through_rest(door: Door) -> None:
    response = rest(door, {"cypher": "MATCH (n RETURN n"})
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "query_syntax" and body["field"] == "cypher" and body["hint"]


# ----------------------------------------------------------------------------------------------- the server's own layer
@pytest.fixture
def managed(settings: Settings) -> None:
    managed_uris = {f"bolt://127.0.0.1:{bolt}" for bolt, _ in managed_instances(settings.paths.state_dir).values()}
    if settings.neo4j.neo4j_uri not in managed_uris:
        pytest.skip("the tests do not run against a managed Neo4j instance (whose config Lyra writes)")


def test_the_managed_neo4j_reads_no_urls_or_files_even_without_lyras_guard(managed: None, door: Door) -> None:
    driver, db = door.services.store.driver, door.services.store.database
    for cypher, code in (
        (f"LOAD CSV FROM '{door.base_url}/direct.csv' AS r RETURN r", "ExternalResourceFailed"),
        (f"LOAD CSV FROM '{door.base_url.replace('127.0.0.1', 'localhost')}/x.csv' AS r RETURN r", "ExternalResource"),
        ("LOAD CSV FROM 'file:///etc/passwd' AS r RETURN r", "ExternalResourceFailed"),
        (f"CALL apoc.load.json('{door.base_url}/direct.json') YIELD value RETURN value", "ProcedureNotFound"),
        ("CALL apoc.export.json.all(null, {stream: true})", "ProcedureNotFound"),
        ("CALL apoc.util.sleep(1)", "ProcedureNotFound"),
        ("RETURN apoc.cypher.runFirstColumnSingle('RETURN 1', {}) AS x", "SyntaxError"),
    ):
        with pytest.raises(neo4j_errors.Neo4jError) as info:
            driver.execute_query(cypher, database_=db)
        assert code in str(info.value.code), cypher
    assert door.hits == []
    records, _, _ = driver.execute_query(
        "CALL dbms.listConfig('dbms.security.procedures') YIELD name, value RETURN name, value", database_=db
    )
    config = {r["name"]: r["value"] for r in records}
    assert config["dbms.security.procedures.allowlist"] == server_procedure_allowlist()
    assert config["dbms.security.procedures.unrestricted"] == ""
    (row,), _, _ = driver.execute_query("RETURN apoc.coll.sum([1, 2]) AS three", database_=db)
    assert row["three"] == 3
    with pytest.raises(neo4j_errors.Neo4jError) as info:  # dropped from the allow-list: not even loaded
        driver.execute_query("RETURN apoc.coll.fill('x', 2) AS x", database_=db)
    assert "Unknown function" in str(info.value.message) or "SyntaxError" in str(info.value.code)


def test_the_managed_neo4j_limits_transaction_memory_and_a_runaway_query_fails_alone(
    managed: None, door: Door, settings: Settings
) -> None:
    driver, db = door.services.store.driver, door.services.store.database
    records, _, _ = driver.execute_query(
        "CALL dbms.listConfig('memory.transaction') YIELD name, value RETURN name, value", database_=db
    )
    config = {r["name"]: r["value"] for r in records}
    assert config["db.memory.transaction.max"] != "0B"  # per transaction (unlimited by default)
    assert config["dbms.memory.transaction.total.max"] != "0B"
    started = time.monotonic()
    response = rest(door, {"cypher": "UNWIND range(1, 50000000) AS x RETURN size(collect(x)) AS n"})
    assert response.status_code == 422 and response.json()["error"] == "query_memory"
    assert "db.memory.transaction.max" in response.json()["message"]
    assert time.monotonic() - started < 30
    assert rest(door, {"cypher": "RETURN 1 AS one"}).json()["rows"] == [{"one": 1}]
