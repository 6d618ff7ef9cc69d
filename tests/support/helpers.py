"""Small builders for integration tests (they write through Lyra's own repositories)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from lyra.bootstrap import Services, build_services
from lyra.core.settings import Settings, load_settings
from lyra.models.api import GetMaterialsRequest, MaterialClaim, MaterialsOptions
from lyra.models.confidence import EdgeEvidence
from lyra.models.graph import DomainCategory
from lyra.models.trust import FeedbackRequest
from lyra.services.web_search import WebSearch

if TYPE_CHECKING:
    from lyra.services.web_search import PersonQueue
    from lyra.sources.search import SearchEngine
    from lyra.sources.web import WebFetcher


S = TypeVar("S")


def seed_task(services: Services, task_id: str, claims: Sequence[str]) -> list[str]:
    services.tasks.create_task(task_id, f"hypothesis of {task_id}", hypothesis_as_claim=False)
    return services.tasks.add_claims(task_id, list(claims))


def seed_fragments(
    services: Services,
    count: int,
    prefix: str = "frag",
    host: str = "example.org",
    domain_category: DomainCategory = "academic",
) -> list[str]:
    """One fragment on each of `count` new pages of `host` (the host's Domain takes `domain_category` when it
    is new)."""
    pages = services.evidence.upsert_pages(
        [{"url": f"https://{host}/{prefix}/{i}", "domain_category": domain_category} for i in range(count)]
    ).ids
    return services.evidence.upsert_fragments(
        [{"page_id": pages[i], "text": f"{prefix} text {i}"} for i in range(count)]
    ).ids


def write_edges(
    services: Services,
    task_id: str,
    claim_id: str,
    fragment_ids: Sequence[str],
    edges: Sequence[EdgeEvidence],
    categories: Sequence[str] | None = None,
) -> list[str]:
    """Stance edges of a claim of `task_id`, written by the real writer; the edges marked human-corrected are then
    reviewed through the feedback tool (edge_correct with the same relation), as a person would."""
    rows = [
        {
            "fragment_id": fragment_ids[i],
            "claim_id": claim_id,
            "relation": e.relation,
            "nli_confidence": e.nli_confidence,
            "source_domain_category": categories[i % len(categories)] if categories else None,
        }
        for i, e in enumerate(edges)
    ]
    ids = services.evidence.create_stance_edges(rows).ids
    for edge_id, edge in zip(ids, edges, strict=True):
        if edge.edge_human_corrected:
            args = {"edge_id": edge_id, "correct_relation": edge.relation.lower()}
            services.feedback.feedback(FeedbackRequest(task_id=task_id, action="edge_correct", args=args))
    return ids


def claim_materials(services: Services, task_id: str, evidence_limit: int = 10) -> list[MaterialClaim]:
    """The task's claims as get_materials returns them (the one path that computes confidence)."""
    request = GetMaterialsRequest(task_id=task_id, options=MaterialsOptions(evidence_limit=evidence_limit))
    return services.materials.materials(request).claims


ROOT = Path(__file__).resolve().parents[2]
# this folder: the shared helpers and the scripts some tests run as subprocesses (job_claimer.py, paused_serve.py)
SUPPORT_DIR = Path(__file__).resolve().parent


def replay_settings(graph: Services, overrides: dict[str, Any], **extra: Any) -> Settings:
    """Settings on the test Neo4j with the scholarly sources pointed at a replay server (its
    ``settings_overrides()``), fast rates and short retries, plus ``extra``."""
    s = graph.settings.neo4j
    return load_settings(
        neo4j_uri=s.neo4j_uri,
        neo4j_username=s.neo4j_username,
        neo4j_password=s.neo4j_password,
        **overrides,
        crossref_requests_per_second=500.0,
        openalex_requests_per_second=500.0,
        scholarly_timeout_seconds=2.0,
        scholarly_max_attempts=2,
        scholarly_retry_initial_wait=0.01,
        scholarly_retry_max_wait=0.1,
        scholarly_retry_timeout=2.0,
        contact_email="tests@example.org",
        **extra,
    )


def neo4j_env(settings: Settings) -> dict[str, str]:
    """Environment variables pointing a `lyra` subprocess at the Neo4j under test."""
    return {
        "NEO4J_URI": str(settings.neo4j.neo4j_uri),
        "NEO4J_USERNAME": settings.neo4j.neo4j_username,
        "NEO4J_PASSWORD": settings.neo4j.neo4j_password.get_secret_value() if settings.neo4j.neo4j_password else "",
    }


def run_lyra(
    *args: str, env: dict[str, str] | None = None, without_neo4j_env: bool = False, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the real `lyra` command line in a subprocess, from the repository root."""
    base = {k: v for k, v in os.environ.items() if not (without_neo4j_env and k.startswith("NEO4J_"))}
    return subprocess.run(
        [sys.executable, "-m", "lyra", *args],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served:
    """One real `lyra serve` process on 127.0.0.1 (``args``: more command-line options, e.g. ``--no-workers``)."""

    def __init__(self, env: dict[str, str], port: int, log: Path, args: Sequence[str] = ()) -> None:
        self.env, self.port, self.log, self.args = env, port, log, list(args)
        self.process: subprocess.Popen[bytes] | None = None
        self.base = f"http://127.0.0.1:{port}"

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "lyra", "serve", "--port", str(self.port), *self.args],
                env=self.env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            try:
                if httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise AssertionError("lyra serve did not answer: " + self.log.read_text()[-3000:])

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()


@contextmanager
def stateful_site(
    make_state: Callable[[int], S],
    make_handler: Callable[[S], type[BaseHTTPRequestHandler]],
    server_class: type[ThreadingHTTPServer] = ThreadingHTTPServer,
) -> Iterator[S]:
    """A real HTTP server on 127.0.0.1 whose handler (``make_handler(state)``) shares a state made from its port
    (``make_state(port)``); yields the state, stops the server after."""
    server = server_class(("127.0.0.1", 0), BaseHTTPRequestHandler)
    state = make_state(server.server_address[1])
    server.RequestHandlerClass = make_handler(state)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def article_site(article: Callable[[str], bytes]) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 serving ``/robots.txt`` (everything allowed) and ``/article`` (``article``
    gets the address the client used, ``http://host:port``); yields that address for 127.0.0.1."""

    class Pages(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/robots.txt":
                body, kind = b"User-agent: *\nAllow: /\n", "text/plain"
            elif self.path == "/article":
                body, kind = article(f"http://{self.headers['Host']}"), "text/html; charset=utf-8"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def learning_services(settings: Settings, tmp_path: Path, **overrides: Any) -> Iterator[Services]:
    """Services over the test database for the learning-loop tests: their own state folder (FAISS, caches), the
    trained judge, one fragment per abstract (so a judged pair is an ingested abstract with its claim), proposals
    from 3 corrections; ``overrides`` on top."""
    values: dict[str, Any] = {
        "state_dir": tmp_path / "state",
        "chunk_max_chars": 5000,
        "nli_backend": "trained",
        "learning_min_evidence": 3,
        **overrides,
    }
    services = build_services(settings.model_copy(update=values), apply_schema=False)
    try:
        yield services
    finally:
        services.close()


def write_abstracts(path: Path, records: Sequence[tuple[str, str, str]]) -> Path:
    """A JSONL file of abstracts, one per (title, abstract, url), as ingest reads them."""
    lines = [json.dumps({"title": title, "abstract": abstract, "url": url}) + "\n" for title, abstract, url in records]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def web_search(
    graph: Services,
    settings: Settings,
    fetcher: WebFetcher,
    engines: list[SearchEngine],
    notes: Sequence[str] = (),
    interventions: PersonQueue | None = None,
) -> WebSearch:
    """The web search of a ``query`` job over the test's fetcher and engines, with the services' embedder, ranker
    and domain gate (and, given, the human-in-the-loop queue)."""
    ingest = graph.ingest
    return WebSearch(
        settings.search, settings.pipeline, graph.store, engines, fetcher, ingest.embedder, ingest.ranker,
        graph.domains, notes, interventions=interventions,
    )  # fmt: skip
