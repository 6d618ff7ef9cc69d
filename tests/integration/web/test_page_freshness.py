"""Known pages re-checked only when their source says they changed (docs/concepts/living-evidence.md): ``url``
jobs read pages served on 127.0.0.1 and keep their ETag, Last-Modified and content hash; refresh_task asks each
page again with a conditional GET. A page answering 304 is not read, one answering the same body is unchanged, one
whose server dropped its validators is asked unconditionally, a changed page gets changed_at and is queued to be
read again through the ingest path (its new passages judged, the claims' stored sums exact), a page now missing is a
failure with its reason; none of the url targets is simply queued again. Real Neo4j, real offline models, a real
HTTP server, the real worker pool."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from lyra.bootstrap import Services
from lyra.core.settings import load_settings
from lyra.models.api import GetStatusRequest, QueueTargetsRequest, RescoreRequest, Target
from lyra.models.refresh import RefreshRequest
from lyra.services.freshness import PageRechecker
from lyra.services.jobs import WorkerPool
from lyra.services.politeness import GraphPageCounter, GraphRateLimiter
from lyra.services.refresh import RefreshService
from lyra.services.research import ResearchExecutor
from lyra.sources.web import WebFetcher
from lyra.sources.web.ssrf import system_resolver

pytestmark = pytest.mark.neo4j
TASK = "fresh_pages"
CLAIM = "Time-restricted eating improves insulin sensitivity in adults"
FIRST = """<!doctype html><html><head><title>Fasting trial {name}</title></head><body><article>
<h1>Time-restricted eating in adults ({name})</h1>
<p>In a randomized trial of 90 adults, eating within an eight-hour window for twelve weeks improved insulin
sensitivity compared with usual eating, independently of weight loss. Fasting insulin fell by eleven percent and
the effect persisted at a follow-up visit three months after the intervention ended.</p></article></body></html>"""
SECOND = """<!doctype html><html><head><title>Fasting trial {name}</title></head><body><article>
<h1>Time-restricted eating in adults ({name}), corrected</h1>
<p>A corrected analysis of the randomized trial of 90 adults found that eating within an eight-hour window for
twelve weeks did not change insulin sensitivity compared with usual eating once weight loss was accounted for; the
earlier report had not adjusted for the weight the participants lost during the intervention.</p>
</article></body></html>"""
LAST_MODIFIED = "Wed, 21 Oct 2026 07:28:00 GMT"


@dataclass
class Page:
    body: str
    etag: str | None = None
    last_modified: str | None = None
    honour_conditions: bool = True
    status: int = 200


@dataclass
class Site:
    port: int
    pages: dict[str, Page] = field(default_factory=dict)
    hits: list[dict[str, Any]] = field(default_factory=list)  # path, If-None-Match, If-Modified-Since, status

    def url(self, path: str) -> str:
        return f"http://news.test:{self.port}{path}"

    def asked(self, path: str) -> list[dict[str, Any]]:
        return [hit for hit in self.hits if hit["path"] == path]


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            page = site.pages.get(self.path)
            hit = {
                "path": self.path,
                "if_none_match": self.headers.get("If-None-Match"),
                "if_modified_since": self.headers.get("If-Modified-Since"),
            }
            site.hits.append(hit)
            if page is None:
                hit["status"] = 404
                data = b"<html><body>not here</body></html>"
                self.send_response(404)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            fresh = page.honour_conditions and (
                (page.etag is not None and hit["if_none_match"] == page.etag)
                or (
                    page.etag is None
                    and page.last_modified is not None
                    and hit["if_modified_since"] == page.last_modified
                )
            )
            hit["status"] = 304 if fresh else page.status
            self.send_response(hit["status"])
            if page.etag:
                self.send_header("ETag", page.etag)
            if page.last_modified:
                self.send_header("Last-Modified", page.last_modified)
            if fresh:
                self.end_headers()
                return
            data = page.body.encode()
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@pytest.fixture
def site() -> Iterator[Site]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(Site(0)))
    state = Site(server.server_address[1])
    server.RequestHandlerClass = _handler(state)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def resolver(host: str, port: int) -> list[str]:
    return ["127.0.0.1"] if host.endswith(".test") else system_resolver(host, port)


@dataclass
class World:
    graph: Services
    site: Site
    refresh: RefreshService

    def settle(self) -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            status = self.graph.operations.get_status(GetStatusRequest(task_id=TASK, wait=1))
            if status.jobs.queued + status.jobs.running == 0:
                return
        raise AssertionError("the jobs did not settle")

    def page(self, path: str) -> dict[str, Any]:
        records, _, _ = self.graph.store.driver.execute_query(
            "MATCH (p:Page {url: $url}) RETURN p.id AS id, p.etag AS etag, p.last_modified AS last_modified, "
            "p.content_hash AS content_hash, p.changed_at IS NOT NULL AS changed, "
            "COUNT { (p)<-[:EXTRACTED_FROM]-(:Fragment) } AS fragments",
            {"url": self.site.url(path)},
            database_=self.graph.store.database,
        )
        return records[0].data()


@pytest.fixture
def world(graph: Services, site: Site) -> Iterator[World]:
    settings = load_settings(
        fetch_allow_hosts=["127.0.0.1"],
        web_timeout_seconds=10.0,
        web_robots_txt=False,
        neo4j_password=graph.settings.neo4j.neo4j_password,
    )
    fetcher = WebFetcher.from_settings(
        settings,
        gate=graph.domains,
        counter=GraphPageCounter(graph.store),
        limiter=GraphRateLimiter(graph.store),
        resolver=resolver,
    )
    executor = ResearchExecutor(
        graph.store, lambda: graph.ingest, graph.settings.paths.allowed_roots, web=lambda: fetcher
    )
    pool = WorkerPool(graph.store, executor, poll_seconds=0.1, heartbeat_seconds=0.5)
    graph.jobs.on_queued(pool.wake)
    pool.start()
    pages = PageRechecker(graph.store, graph.jobs, lambda: fetcher)
    refresh = RefreshService(graph.store, graph.jobs, graph.retractions, graph.timeline, pages)
    try:
        yield World(graph, site, refresh)
    finally:
        pool.stop()
        fetcher.close()
        graph.jobs._listeners.remove(pool.wake)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_known_pages_are_read_again_only_when_their_source_says_they_changed(world: World) -> None:
    graph, site = world.graph, world.site
    site.pages = {
        "/tagged": Page(FIRST.format(name="tagged"), etag='"v1"', last_modified=LAST_MODIFIED),
        "/dated": Page(FIRST.format(name="dated"), last_modified=LAST_MODIFIED),
        "/bare": Page(FIRST.format(name="bare")),
        "/moving": Page(FIRST.format(name="moving"), etag='"m1"'),
        "/leaving": Page(FIRST.format(name="leaving"), etag='"l1"'),
    }
    graph.tasks.create_task(TASK, CLAIM)
    targets = [Target(kind="url", value=site.url(path)) for path in site.pages]
    graph.operations.queue_targets(QueueTargetsRequest(task_id=TASK, targets=targets))
    world.settle()

    # 1. a fetch keeps what the source said: validators as sent (none when none) and the body's sha256
    tagged = world.page("/tagged")
    assert (tagged["etag"], tagged["last_modified"]) == ('"v1"', LAST_MODIFIED)
    assert tagged["content_hash"] == sha(FIRST.format(name="tagged")) and not tagged["changed"]
    assert world.page("/bare")["etag"] is None and world.page("/bare")["content_hash"] == sha(FIRST.format(name="bare"))
    assert world.page("/dated")["last_modified"] == LAST_MODIFIED and world.page("/dated")["etag"] is None
    moving_before = world.page("/moving")
    assert moving_before["fragments"] >= 1

    # 2. nothing changed: 304 where the server honours the validators, the same hash where it has none
    site.hits.clear()
    first = world.refresh.refresh(RefreshRequest(task_id=TASK, max_targets=20))
    pages = first.pages
    assert pages is not None
    by_path = {p.url.rsplit("/", 1)[1]: p for p in pages.pages}
    assert {k: v.result for k, v in by_path.items()} == {
        "tagged": "not_modified",
        "dated": "not_modified",
        "bare": "same_hash",
        "moving": "not_modified",
        "leaving": "not_modified",
    }
    assert (pages.checked, pages.unchanged, pages.not_modified, pages.same_hash) == (5, 5, 4, 1)
    assert (pages.changed, pages.failed, pages.requeued, pages.first_check) == (0, 0, 0, 0)
    (asked,) = site.asked("/tagged")
    assert asked["if_none_match"] == '"v1"' and asked["if_modified_since"] == LAST_MODIFIED
    (asked,) = site.asked("/dated")
    assert asked["if_none_match"] is None and asked["if_modified_since"] == LAST_MODIFIED
    (asked,) = site.asked("/bare")
    assert asked["if_none_match"] is None and asked["if_modified_since"] is None and asked["status"] == 200
    # the url targets were re-checked, not queued again
    assert {t.status for t in first.targets} == {"rechecked"} and first.queued == 0
    assert len(site.hits) == 5

    # 3. the sources change: a new body, a server dropping its validators, a page gone
    site.pages["/moving"] = Page(SECOND.format(name="moving"), etag='"m2"')
    site.pages["/tagged"] = Page(FIRST.format(name="tagged"), honour_conditions=False)  # no validators any more
    del site.pages["/leaving"]
    site.hits.clear()
    second = world.refresh.refresh(RefreshRequest(task_id=TASK, max_targets=20))
    pages = second.pages
    assert pages is not None
    by_path = {p.url.rsplit("/", 1)[1]: p for p in pages.pages}
    assert by_path["moving"].result == "changed" and by_path["moving"].job_id is not None
    assert by_path["moving"].status == 200
    assert by_path["tagged"].result == "same_hash"  # asked with its old ETag, answered in full, the same body
    assert by_path["leaving"].result == "failed" and by_path["leaving"].failure == "http_error"
    assert by_path["leaving"].status == 404 and "404" in by_path["leaving"].reason
    assert (pages.changed, pages.failed, pages.requeued, pages.unchanged) == (1, 1, 1, 3)
    tagged = world.page("/tagged")
    assert tagged["etag"] is None and tagged["last_modified"] is None  # dropped: asked unconditionally next time
    changed = world.page("/moving")
    assert changed["changed"] and changed["etag"] == '"m2"'
    assert changed["content_hash"] == sha(SECOND.format(name="moving"))
    assert world.page("/leaving")["etag"] == '"l1"'  # a failure keeps what was known

    # the run keeps the counts
    records, _, _ = graph.store.driver.execute_query(
        "MATCH (r:Run {id: $id}) RETURN r.pages_checked AS c, r.pages_unchanged AS u, r.pages_changed AS ch, "
        "r.pages_failed AS f",
        {"id": second.run_id},
        database_=graph.store.database,
    )
    assert records[0].data() == {"c": 5, "u": 3, "ch": 1, "f": 1}

    # 4. the changed page is read again through the ingest path: its new passage judged, the sums exact
    world.settle()
    assert world.page("/moving")["fragments"] > moving_before["fragments"]
    reread = [hit for hit in site.asked("/moving") if hit["if_none_match"] is None]
    assert len(reread) == 1 and reread[0]["status"] == 200
    records, _, _ = graph.store.driver.execute_query(
        "MATCH (p:Page {url: $url})<-[:EXTRACTED_FROM]-(f:Fragment)-[:SUPPORTS|REFUTES|NEUTRAL]->"
        "(:Claim {task_id: $t}) WHERE f.text CONTAINS 'corrected analysis' RETURN count(*) AS judged",
        {"url": site.url("/moving"), "t": TASK},
        database_=graph.store.database,
    )
    assert records[0]["judged"] >= 1  # the new passage was judged against the task's claim
    check = graph.operations.rescore_claims(RescoreRequest(task_id=TASK, check=True))
    assert check.differing == 0 and check.claims >= 1

    # 5. asked again: the re-read page answers 304 to its new ETag
    site.hits.clear()
    third = world.refresh.refresh(RefreshRequest(task_id=TASK, max_targets=20, max_rechecks=2))
    assert third.pages is not None and third.pages.checked == 2  # the budget: the two least recently checked
    assert len({hit["path"] for hit in site.hits}) == 2
    # url targets not re-checked in this refresh are queued as before (they are not known to this refresh)
    assert sum(1 for t in third.targets if t.status == "rechecked") == 2
