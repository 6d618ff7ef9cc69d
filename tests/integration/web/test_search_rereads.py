"""A known page read again through a web-search result compares versions like a ``url`` job's re-read (decision
record 0016): a loopback SearXNG answers every query with one article page on the same loopback server; task A's
query job reads the page (two passages, both judged against A's claim); the page loses its second passage; task B's
query job (B has not read it: the search fetches it) reads the new version, and A's edge from the passage that left
the page counts for nothing (out of A's claim's stored sums, flagged in materials, a passage_superseded event in the
timeline, a page_changed cause in A's get_changes), as does B's own edge from it if one is drawn. Real Neo4j, real
offline models, the real fetcher and worker pool."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from lyra.bootstrap import Services
from lyra.models.api import GetStatusRequest, QueueTargetsRequest, Target, TargetOptions
from lyra.models.timeline import GetChangesRequest
from lyra.services.jobs import WorkerPool
from lyra.services.research import ResearchExecutor
from lyra.sources.search import build_engines
from lyra.sources.web import WebFetcher
from lyra.sources.web.ssrf import system_resolver
from tests.support.helpers import stateful_site, web_search
from tests.support.passages import (
    CLAIM,
    COUNT_KEY,
    DROPPED,
    KEPT,
    assert_sums_exact,
    edges_of,
    evidence_item,
    superseded_links,
    timeline_edges,
)

pytestmark = pytest.mark.neo4j
QUERY = "time-restricted eating insulin sensitivity"


def article(*paragraphs: str) -> str:
    body = "".join(f"<p>{p}</p>\n" for p in paragraphs)
    return (
        "<!doctype html><html><head><title>Fasting trials</title></head><body><article>"
        f"<h1>Time-restricted eating and insulin</h1>\n{body}</article></body></html>"
    )


@dataclass
class Web:
    port: int
    page: str = ""
    hits: list[str] = field(default_factory=list)  # the article's reads

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"


def _handler(web: Web) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
            parts = urlsplit(self.path)
            if host == "searx.test" and parts.path == "/search":
                query = parse_qs(parts.query)
                results = [
                    {
                        "url": web.url("news.test", "/trials"),
                        "title": "Time-restricted eating improves insulin sensitivity in adults",
                        "content": "A randomized trial: eating within an eight-hour window improved insulin "
                        "sensitivity in adults.",
                        "engine": "bing",
                        "engines": ["bing"],
                        "positions": [1],
                        "score": 1.0,
                        "category": "general",
                    }
                ]
                first = query.get("pageno", ["1"]) == ["1"]  # only the first page of results has any
                answer = {"query": query["q"][0], "results": results if first else []}
                self._send(200, json.dumps(answer).encode(), "application/json")
            elif host == "news.test" and parts.path == "/trials":
                web.hits.append(self.path)
                self._send(200, web.page.encode(), "text/html; charset=utf-8")
            else:
                self._send(404, b"not here", "text/plain")

    return Handler


@pytest.fixture
def web() -> Iterator[Web]:
    with stateful_site(Web, _handler) as state:
        yield state


def resolver(host: str, port: int) -> list[str]:
    return ["127.0.0.1"] if host.endswith(".test") else system_resolver(host, port)


@dataclass
class World:
    graph: Services
    web: Web
    pool: WorkerPool

    def search(self, task_id: str) -> dict[str, Any]:
        """Task ``task_id`` runs the query (web search only); returns its job's result."""
        self.graph.tasks.create_task(task_id, CLAIM)
        target = Target(kind="query", value=QUERY, options=TargetOptions(academic_search="off"))
        self.graph.operations.queue_targets(QueueTargetsRequest(task_id=task_id, targets=[target]))
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            status = self.graph.operations.get_status(GetStatusRequest(task_id=task_id, wait=1, detail="full"))
            if status.jobs.queued + status.jobs.running == 0:
                (job,) = status.job_list or []
                assert job.state == "done", job.error
                assert job.result is not None
                return job.result
        raise AssertionError("the query job did not finish")

    def page_id(self) -> str:
        records, _, _ = self.graph.store.driver.execute_query(
            "MATCH (p:Page {url: $url}) RETURN p.id AS id",
            {"url": self.web.url("news.test", "/trials")},
            database_=self.graph.store.database,
        )
        return str(records[0]["id"])


@pytest.fixture
def world(graph: Services, web: Web) -> Iterator[World]:
    settings = graph.settings.model_copy(
        update={
            "fetch_allow_hosts": ["127.0.0.1"],
            "web_timeout_seconds": 30.0,
            "web_robots_txt": False,
            "searxng_url": web.url("searx.test", ""),
            "web_search_engines": ["searxng"],
            "web_pages_per_query": 1,
            "web_search_results": 5,
        }
    )
    with WebFetcher.from_settings(settings, gate=graph.domains, resolver=resolver) as fetcher:
        engines, _ = build_engines(settings.search, settings.web.chromium_path, fetcher)
        search = web_search(graph, settings, fetcher, engines)
        executor = ResearchExecutor(
            graph.store, lambda: graph.ingest, settings.paths.allowed_roots, web=lambda: fetcher, search=lambda: search
        )
        pool = WorkerPool(graph.store, executor, poll_seconds=0.1, heartbeat_seconds=0.5)
        graph.jobs.on_queued(pool.wake)
        pool.start()
        try:
            yield World(graph, web, pool)
        finally:
            pool.stop()
            graph.jobs._listeners.remove(pool.wake)


def test_a_page_read_again_through_a_search_result_supersedes_the_passages_that_left_it(world: World) -> None:
    graph, web = world.graph, world.web
    web.page = article(KEPT, DROPPED)
    first_result = world.search("search_a")
    assert first_result["web"]["pages_read"] == 1 and "passages" not in first_result
    page_id = world.page_id()
    first = edges_of(graph, page_id, "search_a")
    assert set(first) == {"kept", "dropped"}, first  # both passages were judged against task A's claim
    assert not first["kept"]["superseded"] and not first["dropped"]["superseded"]
    claim_id, dropped_id = first["dropped"]["claim_id"], first["dropped"]["id"]
    counts_key = COUNT_KEY[first["dropped"]["rel"]]
    before = assert_sums_exact(graph, claim_id, "search_a")

    # the page loses its second passage; task B's search reads it again
    web.page = article(KEPT)
    since = graph.store.driver.execute_query("RETURN toString(datetime()) AS now").records[0]["now"]
    second_result = world.search("search_b")
    assert second_result["web"]["pages_read"] == 1 and len(web.hits) == 2
    assert world.page_id() == page_id
    assert second_result["passages"]["superseded"] == 1 and second_result["passages"]["edges_superseded"] >= 1
    assert superseded_links(graph, page_id) == [(False, False), (True, True)]
    second = edges_of(graph, page_id, "search_a")
    assert second["dropped"]["id"] == dropped_id and second["dropped"]["superseded"]
    assert not second["kept"]["superseded"]
    after = assert_sums_exact(graph, claim_id, "search_a")
    assert after[counts_key] == before[counts_key] - 1
    if first["dropped"]["rel"] != "NEUTRAL":
        weight_key = "sw" if first["dropped"]["rel"] == "SUPPORTS" else "rw"
        assert after[weight_key] == pytest.approx(before[weight_key] - first["dropped"]["weight"], abs=1e-9)
    item = evidence_item(graph, "search_a", claim_id, dropped_id)
    assert item.superseded and not item.retracted and item.weight == 0.0
    assert timeline_edges(graph, "search_a", claim_id, "passage_superseded") == [dropped_id]
    # task A's get_changes names the changed page, although the run that read it was task B's
    changes = graph.operations.get_changes(GetChangesRequest(task_id="search_a", since=since))
    (moved,) = [c for c in changes.claims if c.claim_id == claim_id]
    cause = next(c for c in moved.causes if c.kind == "page_changed")
    assert (
        cause.edge_ids == [dropped_id] and cause.page is not None and cause.page.url == web.url("news.test", "/trials")
    )
    # task B read only the new version: an edge it has from the passage that left counts for nothing either
    theirs = edges_of(graph, page_id, "search_b")
    assert "kept" in theirs and not theirs["kept"]["superseded"]
    assert "dropped" not in theirs or theirs["dropped"]["superseded"]
    assert_sums_exact(graph, theirs["kept"]["claim_id"], "search_b")
