"""Hostile input through every REST route and every MCP tool, on the real Neo4j.

The corpus is tests/data/hostile_inputs.yaml (its header says what each case holds and what is asserted). The app
is the one `lyra serve` runs — REST under /api/v1, MCP streamable HTTP at /mcp, the report pages — served by
uvicorn on 127.0.0.1 inside this process, over operations whose file targets are confined to a temporary folder
and whose similarity search uses a small hash embedder (no model is loaded). The graph is seeded once (the example
task with its claims, evidence edges, pages and domains, plus a queued job); every case is sent, and:

- no answer is a 5xx, an MCP internal error (JSON-RPC -32603) or a tool error "internal_error";
- a refused case gets a 4xx with the documented error body (or an MCP tool error / JSON-RPC error), naming the
  field when the corpus says which; a benign one gets a 2xx and leaves the seed in place;
- no answer holds a traceback or a server path (unless the request itself held that text);
- after every refused request the graph — every node and relationship, with labels, type and properties — is
  exactly as seeded; after a benign one the seed is checked to be intact and then restored;
- after every MCP call the session still answers a ping.

An MCP tool case is sent twice: through the SDK's in-process client (as tests/integration/mcp/test_mcp_tools.py does)
and as raw JSON-RPC over /mcp in one initialised session (the transport `lyra serve` gives clients). Totals per
category and door are printed at the end of the module.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import httpx
import numpy as np
import pytest
import uvicorn
import yaml
from anyio.from_thread import BlockingPortal, start_blocking_portal
from fastapi import FastAPI
from mcp import Client
from mcp.shared.exceptions import MCPError
from starlette.routing import Match

from lyra.api.app import create_app
from lyra.bootstrap import Services
from lyra.core.settings import load_settings
from lyra.graph.connection import bind_neomodel
from lyra.mcp.server import create_mcp_server
from lyra.ml.protocols import FloatArray
from lyra.ml.vector_index import FragmentIndex
from lyra.models.api import QueueTargetsRequest, Target
from lyra.services.explore import ExploreService
from lyra.services.graph_import import load_graph_file
from lyra.services.jobs import JobService
from lyra.services.judging import JudgingService
from lyra.services.learning import LearningService
from lyra.services.operations import Operations
from tests.support.helpers import ROOT
from tests.support.raw_http import post_chunked

pytestmark = pytest.mark.neo4j
CORPUS_PATH = ROOT / "tests" / "data" / "hostile_inputs.yaml"
CORPUS: dict[str, Any] = yaml.safe_load(CORPUS_PATH.read_text(encoding="utf-8"))
TASK = "example_vitamin_d"
CATEGORIES = {
    "cypher": "Cypher in every string field",
    "query_door": "the read-only query door",
    "traversal": "traversal and symbolic links",
    "oversized": "oversized strings and bodies",
    "chunked": "chunked bodies without Content-Length",
    "utf8": "invalid UTF-8",
    "surrogate": "lone surrogates in strings and keys",
    "unknown_field": "unknown fields",
    "wrong_type": "wrong types",
    "huge_number": "huge numbers, NaN, Infinity",
    "missing": "empty or missing fields",
    "control": "control characters",
    "nesting": "deep JSON nesting",
    "protocol": "HTTP and MCP transport",
}
TEXT_RANK = {"none": 0, "single": 1, "multi": 2, "control": 3, "never": 99}
MCP_INTERNAL_ERROR = -32603
DIMENSION = 16


# ----------------------------------------------------------------------------------------------------- the corpus
@dataclass(frozen=True)
class Case:
    id: str
    door: str  # "rest" | "mcp"
    category: str
    kind: str  # "rest" (an HTTP request to the app) | "tool" (an MCP tool call) | "mcp_http" (raw HTTP to /mcp)
    spec: dict[str, Any]
    benign: bool = False
    status: int | None = None
    error: str | None = None
    field: str | dict[str, str] | None = None  # one name, or {rest: ..., mcp: ...} when the doors name it apart
    shape: str = "json"  # "text": the answer may be the HTTP server's own (not JSON)

    @property
    def name(self) -> str:
        return f"{self.door}:{self.id}"

    def field_for(self, transport: str) -> str | None:
        if isinstance(self.field, dict):
            return self.field.get("rest" if transport == "rest" else "mcp")
        return self.field


def _fill(template: Any, payload: str) -> Any:
    """The template with the payload where "{}" stands: a whole value, a key, or inside a path (percent-encoded)."""
    if isinstance(template, str):
        return payload if template == "{}" else template
    if isinstance(template, dict):
        return {_fill(key, payload): _fill(value, payload) for key, value in template.items()}
    if isinstance(template, list):
        return [_fill(item, payload) for item in template]
    return template


def _fill_request(spec: dict[str, Any], payload: str) -> dict[str, Any]:
    out = {key: _fill(value, payload) for key, value in spec.items() if key != "path"}
    if "path" in spec:
        out["path"] = spec["path"].replace("{}", quote(payload.encode("utf-8", "surrogatepass"), safe=""))
    return out


def expand(corpus: dict[str, Any]) -> list[Case]:
    cases: list[Case] = []
    for slot in corpus["string_fields"]:
        for payload in corpus["payloads"]:
            benign = TEXT_RANK[payload["text"]] <= TEXT_RANK[slot["takes"]]
            name = f"{slot['id']}<-{payload['id']}"
            if "rest" in slot:
                spec = _fill_request(slot["rest"], payload["value"])
                cases.append(Case(name, "rest", "cypher", "rest", spec, benign=benign))
            if "mcp" in slot:
                spec = _fill_request(slot["mcp"], payload["value"])
                cases.append(Case(name, "mcp", "cypher", "tool", spec, benign=benign))
    for entry in corpus["cases"]:
        common: dict[str, Any] = {
            "category": entry["category"],
            "benign": entry.get("benign", False),
            "status": entry.get("status"),
            "error": entry.get("error"),
            "field": entry.get("field"),
            "shape": entry.get("shape", "json"),
        }
        if "rest" in entry:
            cases.append(Case(entry["id"], "rest", kind="rest", spec=entry["rest"], **common))
        if "mcp" in entry:
            cases.append(Case(entry["id"], "mcp", kind="tool", spec=entry["mcp"], **common))
        if "mcp_http" in entry:
            cases.append(Case(entry["id"], "mcp", kind="mcp_http", spec=entry["mcp_http"], **common))
    return cases


CASES = expand(CORPUS)
RESULTS: list[tuple[Case, bool, int]] = []  # a case, whether it passed, in-process calls the client could not send


# ----------------------------------------------------------------------------------------------------- placeholders
PLACEHOLDER = re.compile(r"\{\{(\w+)(?: (\d+)(?: (.*?))?)?\}\}", re.DOTALL)
BUILDERS = {"nested_list", "nested_dict", "big_list"}


def _build(name: str, count: int) -> Any:
    """nested_list N: N levels of lists; nested_dict N: N levels of {"a": ...} around "leaf"; big_list N."""
    if name == "big_list":
        return list(range(count))
    value: Any = [] if name == "nested_list" else "leaf"
    for _ in range(count - 1 if name == "nested_list" else count):
        value = [value] if name == "nested_list" else {"a": value}
    return value


def _build_text(name: str, count: int) -> str:
    """The JSON text of a builder, written without recursion (json.dumps would hit the recursion limit)."""
    if name == "big_list":
        return json.dumps(list(range(count)))
    if name == "nested_list":
        return "[" * count + "]" * count
    return '{"a": ' * count + '"leaf"' + "}" * count


def expand_text(text: str, values: dict[str, str], *, raw: bool = False) -> Any:
    """The text with its placeholders replaced; a whole-value builder becomes the value itself unless ``raw``."""
    whole = PLACEHOLDER.fullmatch(text)
    if whole and whole.group(1) in BUILDERS and not raw:
        return _build(whole.group(1), int(whole.group(2)))

    def one(match: re.Match[str]) -> str:
        name, count, rest = match.group(1), match.group(2), match.group(3)
        if name == "repeat":
            return str(rest) * int(count)
        if name in BUILDERS:
            return _build_text(name, int(count))
        return values[name]

    return PLACEHOLDER.sub(one, text)


def expand_value(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return expand_text(value, values)
    if isinstance(value, dict):
        return {expand_text(k, values) if isinstance(k, str) else k: expand_value(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_value(item, values) for item in value]
    return value


def raw_bytes(text: str) -> bytes:
    """A raw body written one character per byte (YAML \\xNN escapes); other text as UTF-8."""
    if all(ord(ch) < 256 for ch in text):
        return text.encode("latin-1")
    return text.encode("utf-8", "surrogatepass")


def json_bytes(value: Any) -> bytes:
    """ASCII JSON text: lone surrogates become \\udxxx escapes, NaN and Infinity their tokens."""
    return json.dumps(value, ensure_ascii=True, allow_nan=True).encode("ascii")


def _pct(text: str) -> str:
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


def with_query(path: str, params: dict[str, Any] | None) -> str:
    if not params:
        return path
    query = "&".join(f"{_pct(str(k))}={_pct(str(v))}" for k, v in params.items())
    return f"{path}{'&' if '?' in path else '?'}{query}"


# ----------------------------------------------------------------------------------------------------- the answers
@dataclass
class Answer:
    transport: str  # "rest" | "memory" | "wire" | "mcp_http"
    request: str  # the request as text (for the leak check: a marker the request carried is not a leak)
    text: str  # the whole answer as text
    status: int | None = None  # HTTP status (not for the in-process client)
    refused: bool = False
    ok: bool = False
    body: dict[str, Any] | None = None  # Lyra's error body, when the answer carries one
    tool_error: bool = False  # an MCP tool result with isError
    unsent: bool = False  # the in-process client could not encode the arguments: the server saw nothing
    problems: list[str] = field(default_factory=list)


def lyra_body(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict) and isinstance(value.get("error"), str) and isinstance(value.get("message"), str):
        return value
    return None


def json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def sse_messages(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an answer: a JSON body, or the data lines of an event stream."""
    whole = json_or_none(text)
    if isinstance(whole, dict):
        return [whole]
    messages = []
    for line in text.split("\n"):
        if line.startswith("data:"):
            message = json_or_none(line[5:].strip())
            if isinstance(message, dict):
                messages.append(message)
    return messages


def tool_error_body(text: str) -> dict[str, Any] | None:
    """Lyra's JSON inside a tool error's text ("Error executing tool x: {...}")."""
    start = text.find("{")
    return lyra_body(json_or_none(text[start:])) if start >= 0 else None


def judge_rpc(answer: Answer, message: dict[str, Any]) -> None:
    """A JSON-RPC message: an error object, or a tool result (an error or a success)."""
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict) or not isinstance(error.get("code"), int):
            answer.problems.append(f"{answer.transport}: malformed JSON-RPC error {message}")
        elif error["code"] == MCP_INTERNAL_ERROR:
            answer.problems.append(f"{answer.transport}: JSON-RPC internal error {error}")
        answer.refused = True
        return
    result = message.get("result")
    if isinstance(result, dict) and result.get("isError"):
        texts = [c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)]
        answer.body = tool_error_body(" ".join(texts))
        answer.refused = answer.tool_error = True
        return
    answer.ok = True


# ----------------------------------------------------------------------------------------------------- test doubles
class HashEmbedder:
    """Unit vectors from a text's hash: similarity search runs without loading the embedding model."""

    model_id = "test:hash"
    dimension = DIMENSION

    def embed(self, texts: Sequence[str]) -> FloatArray:
        rows = [
            np.frombuffer(hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest()[:DIMENSION], dtype=np.uint8)
            for t in texts
        ]
        vectors = np.asarray(rows, dtype=np.float32) - 127.5
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def operations_for(services: Services, root: Path) -> Operations:
    """The session's services, with file targets confined to ``root`` and search over a hash embedder."""
    index = FragmentIndex(DIMENSION, None, kind="flat")
    explore = ExploreService(
        services.store,
        embedder=HashEmbedder,
        index=lambda: index,
        query_timeout=services.settings.graph.query_timeout,
        query_max_bytes=services.settings.graph.query_max_bytes,
    )
    learning = LearningService(
        services.store,
        services.settings.learning,
        root.parent / "state",
        services.calibration,
        embedder=HashEmbedder,
    )
    return Operations(
        store=services.store,
        task_repo=services.task_repo,
        tasks=services.tasks,
        jobs=JobService(services.store, services.task_repo, [root]),
        status=services.status,
        materials=services.materials,
        cleanup=services.cleanup,
        explore=explore,
        connection=services.connection,
        domains=services.domains,
        feedback=services.feedback,
        calibration=services.calibration,
        ingest=lambda: services.ingest,
        interventions=services.interventions,
        learning=lambda: learning,
        judging=JudgingService(services.store, services.task_repo, services.settings.judging),
        webhooks=services.webhooks,
    )


def make_files(base: Path) -> tuple[Path, Path]:
    """The allowed folder and a folder beside it, with the links the corpus names."""
    root, outside = base / "allowed", base / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nNothing here may reach the graph.\n", encoding="utf-8")
    (root / "note.md").write_text("# Note\n\nA local note about vitamin D and falls.\n", encoding="utf-8")
    (root / "link_out.md").symlink_to(outside / "secret.md")
    (root / "link_dir").symlink_to(outside, target_is_directory=True)
    (root / "hostname.txt").symlink_to("/etc/hostname")
    (root / "loop").symlink_to(root, target_is_directory=True)
    os.mkfifo(root / "pipe.md")
    return root, outside


# ----------------------------------------------------------------------------------------------------- the graph
@dataclass(frozen=True)
class Snapshot:
    nodes: dict[str, tuple[tuple[str, ...], dict[str, Any]]]
    rels: dict[str, tuple[str, str, str, dict[str, Any]]]

    def describe(self, other: Snapshot) -> str:
        """How ``other`` differs from this snapshot (the seed)."""
        parts = [f"nodes {len(self.nodes)} -> {len(other.nodes)}, relationships {len(self.rels)} -> {len(other.rels)}"]
        for kind, before, after in (("node", self.nodes, other.nodes), ("relationship", self.rels, other.rels)):
            added = [after[i] for i in after.keys() - before.keys()][:3]
            removed = [before[i] for i in before.keys() - after.keys()][:3]
            changed = [(before[i], after[i]) for i in before.keys() & after.keys() if before[i] != after[i]][:3]
            for label, items in (("added", added), ("removed", removed), ("changed", changed)):
                if items:
                    parts.append(f"{kind}s {label}: {str(items)[:600]}")
        return "; ".join(parts)


class Graph:
    """The seeded graph: snapshots, and putting the seed back after a benign case changed it."""

    def __init__(self, services: Services, root: Path) -> None:
        self.services = services
        self.root = root
        self.seed = Snapshot({}, {})
        self.values: dict[str, str] = {}

    def _query(self, cypher: str, **params: Any) -> list[dict[str, Any]]:
        records, _, _ = self.services.store.driver.execute_query(cypher, params, database_=self.services.store.database)
        return [record.data() for record in records]

    def snapshot(self) -> Snapshot:
        nodes = {
            r["id"]: (tuple(sorted(r["labels"])), r["props"])
            for r in self._query("MATCH (n) RETURN elementId(n) AS id, labels(n) AS labels, properties(n) AS props")
        }
        rels = {
            r["id"]: (r["type"], r["a"], r["b"], r["props"])
            for r in self._query(
                "MATCH (a)-[r]->(b) RETURN elementId(r) AS id, type(r) AS type, elementId(a) AS a, "
                "elementId(b) AS b, properties(r) AS props"
            )
        }
        return Snapshot(nodes, rels)

    def reseed(self) -> None:
        services = self.services
        bind_neomodel(services.store.driver, services.settings)
        services.store.run("admin/wipe_all_data", {"batch_size": 10_000})
        services.store.run("admin/mark_test_database")
        load_graph_file(ROOT / "config/examples/example_graph.json", services.tasks, services.evidence)
        JobService(services.store, services.task_repo, [self.root]).queue(
            QueueTargetsRequest(task_id=TASK, targets=[Target(kind="file", value="note.md")])
        )
        (row,) = self._query(
            "MATCH (:Task {id: $task})-[:HAS_CLAIM]->(c:Claim)<-[r:SUPPORTS]-() "
            "RETURN c.id AS claim, r.id AS edge ORDER BY c.id, r.id LIMIT 1",
            task=TASK,
        )
        # a job waiting for a person: one pending intervention item (a CAPTCHA its page showed)
        (item,) = self._query(
            "MATCH (t:Task {id: $task})-[:HAS_JOB]->(j:Job) "
            "SET j.state = 'waiting', j.paused_domain = 'journal.example', j.waiting_on = $iv "
            "CREATE (t)-[:HAS_INTERVENTION]->(i:Intervention {id: $iv, task_id: $task, job_id: j.id, "
            "url: 'https://journal.example/a', domain: 'journal.example', kind: 'captcha', reason: 'a widget', "
            "status: 'pending', attempts: 1, created_at: datetime(), updated_at: datetime()})-[:FOR_JOB]->(j) "
            "RETURN i.id AS id",
            task=TASK,
            iv="iv_" + "5" * 32,
        )
        self.values.update(task=TASK, claim=row["claim"], edge=row["edge"], intervention=item["id"])
        self.seed = self.snapshot()

    def seed_intact(self, now: Snapshot) -> list[str]:
        """What of the seed a benign case deleted (nothing may be)."""
        missing = [self.seed.nodes[i] for i in self.seed.nodes.keys() - now.nodes.keys()]
        missing_rels = [self.seed.rels[i] for i in self.seed.rels.keys() - now.rels.keys()]
        return [f"seed deleted: {str(item)[:300]}" for item in [*missing, *missing_rels]]

    def restore(self, now: Snapshot) -> None:
        """Put the seed back: remove what was added, reset changed properties; reseed when that is not enough."""
        seed = self.seed
        if (
            seed.nodes.keys() - now.nodes.keys()
            or seed.rels.keys() - now.rels.keys()
            or any(now.nodes[i][0] != seed.nodes[i][0] for i in seed.nodes)
        ):
            self.reseed()
            return
        self._query(
            "MATCH (n) WHERE elementId(n) IN $ids DETACH DELETE n", ids=list(now.nodes.keys() - seed.nodes.keys())
        )
        self._query(
            "MATCH ()-[r]->() WHERE elementId(r) IN $ids DELETE r", ids=list(now.rels.keys() - seed.rels.keys())
        )
        nodes = [{"id": i, "props": seed.nodes[i][1]} for i in seed.nodes if now.nodes[i][1] != seed.nodes[i][1]]
        rels = [{"id": i, "props": seed.rels[i][3]} for i in seed.rels if now.rels[i][3] != seed.rels[i][3]]
        self._query("UNWIND $rows AS row MATCH (n) WHERE elementId(n) = row.id SET n = row.props", rows=nodes)
        self._query("UNWIND $rows AS row MATCH ()-[r]->() WHERE elementId(r) = row.id SET r = row.props", rows=rels)
        if self.snapshot() != seed:
            self.reseed()


# ----------------------------------------------------------------------------------------------------- the doors
class Wire:
    """One MCP session over the server's streamable HTTP endpoint, spoken as raw JSON-RPC."""

    ACCEPT = "application/json, text/event-stream"

    def __init__(self, base: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=120)
        self.next_id = 1000
        self.headers: dict[str, str] = {}
        self.connect()

    def connect(self) -> None:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        response = self.http.post("/mcp", json=init, headers={"accept": self.ACCEPT})
        (message,) = sse_messages(response.text)
        self.headers = {
            "mcp-session-id": response.headers["mcp-session-id"],
            "mcp-protocol-version": message["result"]["protocolVersion"],
        }
        self.post(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def post(self, body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
        merged = {"content-type": "application/json", "accept": self.ACCEPT, **self.headers, **(headers or {})}
        return self.http.post("/mcp", content=body, headers=merged)

    def call(self, tool: str, arguments: bytes) -> tuple[bytes, httpx.Response]:
        self.next_id += 1
        head = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call"})[:-1]
        body = head.encode() + b', "params": {"name": ' + json.dumps(tool).encode() + b', "arguments": '
        body += arguments + b"}}"
        return body, self.post(body)

    def alive(self) -> bool:
        self.next_id += 1
        response = self.post(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": "ping"}).encode())
        return response.status_code == 200 and any("result" in m for m in sse_messages(response.text))

    def close(self) -> None:
        self.http.close()


def raw_exchange(port: int, data: bytes, timeout: float = 30) -> tuple[int, str]:
    """Send raw bytes; the status and body of the answer (the server closes, or its Content-Length is complete)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        received = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not chunk:
                break
            received += chunk
            head, sep, body = received.partition(b"\r\n\r\n")
            lengths = [line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
            if sep and lengths and len(body) >= int(lengths[0].split(b":", 1)[1]):
                break
    head, _, body = received.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split(b" ")
    status = int(status_line[1]) if len(status_line) > 1 and status_line[1].isdigit() else 0
    return status, body.decode("utf-8", "replace")


@contextmanager
def serving(app: FastAPI) -> Iterator[int]:
    """The app on uvicorn (as `lyra serve` runs it) on a free port of 127.0.0.1, in a thread of this process."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


# ----------------------------------------------------------------------------------------------------- the world
class World:
    def __init__(
        self, graph: Graph, app: FastAPI, port: int, portal: BlockingPortal, client: Client, outside: Path
    ) -> None:
        self.graph = graph
        self.app = app
        self.port = port
        self.portal = portal
        self.client = client
        self.base = f"http://127.0.0.1:{port}"
        self.http = httpx.Client(base_url=self.base, timeout=120)
        self.wire = Wire(f"http://127.0.0.1:{port}")
        self.values = graph.values
        self.values.update(root=str(graph.root), outside=str(outside), host=f"127.0.0.1:{port}")
        # server paths, from this checkout and this environment (a checkout anywhere else sees its own leaks):
        # the checkout, the folder holding it, the home folder, the managed Neo4j's folder, the interpreter's folders
        neo4j_home = load_settings().paths.state_dir / "neo4j"
        self.markers = sorted(
            {"Traceback", 'File "', str(ROOT), "site-packages", str(neo4j_home)}
            | {f"{folder}{os.sep}" for folder in (ROOT.parent, Path.home()) if folder != Path(folder.anchor)}
            | {sys.prefix, sys.base_prefix, os.path.dirname(os.__file__)}
        )
        # the test's own folders are handed out on purpose (the allowed folder is named in hints, a queued file
        # target answers with its resolved path): not a leak, wherever the temporary folder lives
        self.own_folders = sorted({str(graph.root.parent), str(graph.root.parent.resolve())}, key=len, reverse=True)

    def close(self) -> None:
        self.http.close()
        self.wire.close()

    # ------------------------------------------------------------------ sending
    def send_rest(self, spec: dict[str, Any], transport: str = "rest") -> Answer:
        values = self.values
        if "socket" in spec:
            data = raw_bytes(expand_text(spec["socket"], values, raw=True))
            status, text = raw_exchange(self.port, data)
            return Answer(transport, data.decode("latin-1"), text, status)
        if "chunked" in spec:
            chunked = expand_value(spec["chunked"], values)
            answer = post_chunked(
                self.port, chunked["path"], raw_bytes(chunked["head"]), chunked["padding"], raw_bytes(chunked["tail"])
            )
            return Answer(
                transport, f"POST {chunked['path']} {chunked['head']}", json.dumps(answer.body), answer.status
            )
        path = with_query(expand_text(spec["path"], values), expand_value(spec.get("params"), values))
        body: bytes | None = None
        if "json" in spec:
            body = json_bytes(expand_value(spec["json"], values))
        elif "raw" in spec:
            body = raw_bytes(expand_text(spec["raw"], values, raw=True))
        headers: dict[str, str] = {}
        if body is not None:
            headers["content-type"] = spec.get("content_type", "application/json")
        if spec.get("session"):
            headers.update({"accept": Wire.ACCEPT, **self.wire.headers})
        elif transport == "mcp_http":
            headers["accept"] = Wire.ACCEPT
        for key, value in (spec.get("headers") or {}).items():
            if value is None:
                headers.pop(key, None)
            else:
                headers[key] = expand_text(value, values)
        response = self.http.request(
            spec.get("method", "GET"), path, content=body, headers=headers, follow_redirects=True
        )
        request_text = f"{path} {headers} {(body or b'')[:100_000].decode('latin-1')}"
        answer = Answer(transport, request_text, response.text, response.status_code)
        for hop in response.history:  # a redirect (a trailing slash) stays on this server
            location = hop.headers.get("location", "")
            if not ((location.startswith("/") and not location.startswith("//")) or location.startswith(self.base)):
                answer.problems.append(f"{transport}: redirected off the server: {location!r}")
        return answer

    def call_memory(self, tool: str, arguments: dict[str, Any]) -> Answer:
        answer = Answer("memory", repr(arguments)[:100_000], "")
        try:
            result = self.portal.call(self.client.call_tool, tool, arguments)
        except UnicodeEncodeError as exc:  # the SDK's client cannot encode it (a surrogate in a nested key)
            answer.text, answer.refused, answer.unsent = str(exc), True, True
            return answer
        except MCPError as exc:  # a JSON-RPC error (e.g. invalid params)
            answer.text = str(exc)
            if exc.error.code == MCP_INTERNAL_ERROR:
                answer.problems.append(f"memory: JSON-RPC internal error {exc}")
            answer.refused = True
            return answer
        texts = [getattr(c, "text", "") for c in result.content]
        answer.text = " ".join(texts) + json.dumps(result.structured_content, default=str)
        if result.is_error:
            answer.refused = answer.tool_error = True
            answer.body = tool_error_body(" ".join(texts))
        else:
            answer.ok = True
        return answer

    def call_wire(self, tool: str, arguments: bytes) -> Answer:
        body, response = self.wire.call(tool, arguments)
        answer = Answer("wire", body[:100_000].decode("latin-1"), response.text, response.status_code)
        self.judge_mcp_http(answer)
        return answer

    # ------------------------------------------------------------------ judging
    def judge_mcp_http(self, answer: Answer, shape: str = "json") -> None:
        """An answer of /mcp: 4xx with a JSON-RPC error or Lyra's body, or 200/202 with a JSON-RPC message."""
        status = answer.status or 0
        if 400 <= status < 500:
            answer.refused = True
            parsed = json_or_none(answer.text)
            answer.body = lyra_body(parsed)
            is_rpc = isinstance(parsed, dict) and isinstance(parsed.get("error"), dict)
            if answer.body is None and not is_rpc and shape == "json":
                answer.problems.append(f"{answer.transport}: {status} without a documented body: {answer.text[:300]}")
        elif status == 202 and not answer.text.strip():
            answer.ok = True  # a notification or a response, accepted
        elif status == 200:
            messages = sse_messages(answer.text)
            if len(messages) != 1:
                answer.problems.append(f"{answer.transport}: expected one JSON-RPC message, got {answer.text[:300]}")
            for message in messages:
                judge_rpc(answer, message)

    def judge(self, case: Case, answer: Answer) -> None:
        problems = answer.problems
        where = answer.transport
        status = answer.status
        if status is not None and status >= 500:
            problems.append(f"{where}: status {status}: {answer.text[:300]}")
        if answer.transport == "rest" and status is not None and status < 500:
            answer.ok = 200 <= status < 300
            answer.refused = 400 <= status < 500
            parsed = json_or_none(answer.text)
            answer.body = lyra_body(parsed)
            if answer.refused and case.shape == "json":
                if answer.body is None:
                    problems.append(f"{where}: {status} without the documented error body: {answer.text[:300]}")
                elif not set(answer.body) <= {"error", "message", "field", "hint"}:
                    problems.append(f"{where}: unexpected keys in the error body: {sorted(answer.body)}")
        if case.benign and not answer.ok:
            problems.append(f"{where}: a benign case was not accepted: {status} {answer.text[:300]}")
        if not case.benign and not answer.refused:
            problems.append(f"{where}: a hostile case was not refused: {status} {answer.text[:300]}")
        if case.status is not None and where in ("rest", "mcp_http") and status != case.status:
            problems.append(f"{where}: status {status}, expected {case.status}: {answer.text[:300]}")
        body = answer.body
        if case.kind == "tool" and answer.tool_error and body is None:
            problems.append(f"{where}: a tool error without the documented JSON body: {answer.text[:300]}")
        if body is not None and body.get("error") == "internal_error":
            problems.append(f"{where}: internal error: {body}")
        error_checked = case.error is not None and (body is not None or where in ("rest", "mcp_http"))
        if error_checked and (body or {}).get("error") != case.error:
            problems.append(f"{where}: error {(body or {}).get('error')!r}, expected {case.error!r}")
        expected_field = case.field_for(where)
        field_checked = expected_field is not None and (body is not None or where == "rest") and not case.benign
        if field_checked and (body or {}).get("field") != expected_field:
            problems.append(f"{where}: field {(body or {}).get('field')!r}, expected {expected_field!r}: {body}")
        text = answer.text
        for folder in self.own_folders:
            text = text.replace(folder, "<test folder>")
        for marker in self.markers:
            if marker in text and marker not in answer.request:
                problems.append(f"{where}: the answer holds {marker!r}: {answer.text[:500]}")

    def check_graph(self, case: Case, answer: Answer) -> None:
        now = self.graph.snapshot()
        if now == self.graph.seed:
            return
        if case.benign:
            answer.problems.extend(f"{answer.transport}: {p}" for p in self.graph.seed_intact(now))
        else:
            answer.problems.append(f"{answer.transport}: the graph changed: {self.graph.seed.describe(now)}")
        self.graph.restore(now)

    def check_sessions(self, answer: Answer, memory: bool) -> None:
        if memory:  # the in-process client speaks the 2026 protocol, which has no ping: a cheap call instead
            try:
                alive = not self.portal.call(self.client.call_tool, "list_views", {}).is_error
            except Exception as exc:  # the session is gone: a defect, reported
                alive = False
                answer.problems.append(f"memory: the session no longer answers: {exc!r}")
            if not alive:
                answer.problems.append("memory: the session no longer answers")
        if not self.wire.alive():
            answer.problems.append(f"{answer.transport}: the /mcp session no longer answers a ping")
            self.wire.connect()

    # ------------------------------------------------------------------ one case
    def run(self, case: Case) -> list[Answer]:
        answers: list[Answer] = []
        if case.kind == "rest":
            answers.append(self.send_rest(case.spec))
        elif case.kind == "mcp_http":
            answers.append(self.send_rest(case.spec, transport="mcp_http"))
            self.judge_mcp_http(answers[-1], case.shape)
        else:
            via = case.spec.get("via", "both" if "arguments" in case.spec else "wire")
            tool = case.spec["tool"]
            if via in ("memory", "both"):
                arguments = expand_value(case.spec["arguments"], self.values)
                answers.append(self.call_memory(tool, arguments))
                self._finish(case, answers[-1], memory=True)
            if via in ("wire", "both"):
                if "wire" in case.spec:
                    arguments_bytes = raw_bytes(expand_text(case.spec["wire"], self.values, raw=True))
                else:
                    arguments_bytes = json_bytes(expand_value(case.spec["arguments"], self.values))
                answers.append(self.call_wire(tool, arguments_bytes))
                self._finish(case, answers[-1], memory=False)
            return answers
        self._finish(case, answers[-1], memory=False)
        return answers

    def _finish(self, case: Case, answer: Answer, memory: bool) -> None:
        self.judge(case, answer)
        self.check_graph(case, answer)
        if answer.transport != "rest":
            self.check_sessions(answer, memory)


@pytest.fixture(scope="module")
def world(services: Services, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root, outside = make_files(tmp_path_factory.mktemp("hostile"))
    graph = Graph(services, root)
    graph.reseed()
    ops = operations_for(services, root)
    app = create_app(ops, services.settings.api, mcp_server=create_mcp_server(ops))
    with (
        serving(app) as port,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Client(create_mcp_server(ops))) as client,
    ):
        world = World(graph, app, port, portal, client, outside)
        try:
            yield world
        finally:
            world.close()


@pytest.fixture(scope="module", autouse=True)
def totals(request: pytest.FixtureRequest) -> Iterator[None]:
    """The totals per category and door, printed when the module is done."""
    yield
    if not RESULTS:
        return
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    counts: Counter[tuple[str, str]] = Counter()
    failed: Counter[tuple[str, str]] = Counter()
    for case, passed, _ in RESULTS:
        counts[case.category, case.door] += 1
        failed[case.category, case.door] += not passed
    lines = ["", f"hostile inputs ({CORPUS_PATH.relative_to(ROOT)}): cases per category and door (failed)"]
    lines.append(f"  {'category':<16} {'REST':>10} {'MCP':>10}")
    for category in CATEGORIES:
        cells = [f"{counts[category, door]} ({failed[category, door]})" for door in ("rest", "mcp")]
        lines.append(f"  {category:<16} {cells[0]:>10} {cells[1]:>10}")
    rest = sum(n for (_, door), n in counts.items() if door == "rest")
    mcp = sum(n for (_, door), n in counts.items() if door == "mcp")
    tool_calls = sum(1 for case, _, _ in RESULTS if case.kind == "tool")
    unsent = sum(n for _, _, n in RESULTS)
    lines.append(
        f"  total {rest + mcp} cases: REST {rest}, MCP {mcp} ({tool_calls} tool calls, in-process and over /mcp; "
        f"{unsent} the in-process client could not encode); failed {sum(failed.values())}"
    )
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            for line in lines:
                reporter.write_line(line)


# ----------------------------------------------------------------------------------------------------- the tests
def test_the_corpus_is_large_and_covers_every_category() -> None:
    names = [case.name for case in CASES]
    assert len(names) == len(set(names)), [n for n, k in Counter(names).items() if k > 1]
    assert len(CASES) >= 300
    per_category = Counter(case.category for case in CASES)
    assert set(per_category) == set(CATEGORIES), per_category
    for door in ("rest", "mcp"):
        assert len({case.category for case in CASES if case.door == door}) == len(CATEGORIES), door
    assert all(per_category[category] >= 10 for category in CATEGORIES), per_category
    assert sum(case.benign for case in CASES) < len(CASES) // 4  # mostly hostile


def _flat_routes(routes: list[Any]) -> list[Any]:
    """The app's routes, those of its included routers too (FastAPI keeps an included router as one entry whose
    ``original_router`` holds the routes, their paths already prefixed)."""
    flat: list[Any] = []
    for route in routes:
        included = getattr(route, "original_router", None)
        flat.extend(_flat_routes(included.routes) if included is not None else [route])
    return flat


def _route_key(route: Any) -> list[str]:
    methods = sorted(set(getattr(route, "methods", None) or {"*"}) - {"HEAD"})
    return [f"{method} {route.path}" for method in methods]


def _target_of(world: World, case: Case) -> tuple[str, str] | None:
    spec = case.spec
    if "socket" in spec:
        line = expand_text(spec["socket"], world.values).split("\r\n", 1)[0].split(" ")
        return (line[0], line[1]) if len(line) == 3 else None
    if "chunked" in spec:
        return "POST", expand_text(spec["chunked"]["path"], world.values)
    return spec.get("method", "GET"), expand_text(spec["path"], world.values)


def test_every_rest_route_has_cases(world: World) -> None:
    routes = {key: route for route in _flat_routes(world.app.routes) for key in _route_key(route)}
    covered: Counter[str] = Counter()
    for case in CASES:
        if case.kind == "tool":
            continue
        target = _target_of(world, case)
        if target is None:
            continue
        method, path = target
        scope = {"type": "http", "method": method, "path": unquote(path.split("?")[0]), "root_path": ""}
        for key, route in routes.items():
            match, _ = route.matches(scope)
            if match == Match.FULL and (key.startswith(f"{method} ") or key.startswith("* ")):
                covered[key] += 1
    assert len(routes) >= 20
    assert not [key for key in routes if not covered[key]], covered


def test_every_mcp_tool_has_cases(world: World) -> None:
    tools = {tool.name for tool in world.portal.call(world.client.list_tools).tools}
    covered = Counter(case.spec["tool"] for case in CASES if case.kind == "tool")
    assert len(tools) >= 15
    assert not [tool for tool in tools if covered[tool] < 5], covered


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_hostile_input(world: World, case: Case) -> None:
    answers = world.run(case)
    problems = [problem for answer in answers for problem in answer.problems]
    RESULTS.append((case, not problems, sum(answer.unsent for answer in answers)))
    assert not problems, "\n".join(problems)


def test_the_checks_report_a_write_a_server_error_and_a_leak(world: World) -> None:
    """The checks are not vacuous: a 5xx, a traceback, a server path and a write after a refusal are reported,
    a benign case that deleted part of the seed is reported, and the seed is put back each time."""
    store = world.graph.services.store
    hostile = Case("self-check", "rest", "protocol", "rest", {})
    answer = Answer("rest", "GET /", f'Traceback (most recent call last):\n  File "{ROOT}/lyra/x.py"', status=500)
    world.judge(hostile, answer)
    store.driver.execute_query("CREATE (:Pwned {by: 'self-check'})", database_=store.database)
    world.check_graph(hostile, answer)
    problems = "\n".join(answer.problems)
    assert "status 500" in problems and "'Traceback'" in problems and repr(str(ROOT)) in problems
    assert "a hostile case was not refused" in problems and "the graph changed" in problems and "Pwned" in problems
    assert world.graph.snapshot() == world.graph.seed

    benign = Case("self-check", "rest", "protocol", "rest", {}, benign=True)
    answer = Answer("rest", "GET /", "{}", status=200)
    world.judge(benign, answer)
    store.driver.execute_query(
        "MATCH (c:Claim {id: $id}) DETACH DELETE c", {"id": world.values["claim"]}, database_=store.database
    )
    world.check_graph(benign, answer)
    assert answer.problems and all("seed deleted" in p for p in answer.problems), answer.problems
    assert world.graph.snapshot() == world.graph.seed
