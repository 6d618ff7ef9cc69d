"""Known pages re-checked only when their source says they changed (docs/concepts/living-evidence.md): ``url``
jobs read pages served on 127.0.0.1 and keep their ETag, Last-Modified and content hash; refresh_task asks each
page again with a conditional GET. A page answering 304 is not read, one answering the same body is unchanged, one
whose server dropped its validators is asked unconditionally, a changed page gets changed_at and is queued to be
read again through the ingest path (its new passages judged, the claims' stored sums exact), a page now missing is a
failure with its reason; none of the url targets is simply queued again. A passage that left a changed page stops
counting (its edge flagged superseded, out of the claim's stored sums, shown in materials, a page_changed cause in
get_changes) and counts again when a later version brings it back (decision record 0016). Real Neo4j, real
offline models, a real HTTP server, the real worker pool."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from lyra.bootstrap import Services
from lyra.core.settings import load_settings
from lyra.models.api import (
    GetMaterialsRequest,
    GetStatusRequest,
    MaterialsOptions,
    QueueTargetsRequest,
    RescoreRequest,
    Target,
)
from lyra.models.refresh import RefreshRequest
from lyra.models.timeline import GetChangesRequest, GetClaimTimelineRequest
from lyra.services.freshness import PageRechecker
from lyra.services.jobs import WorkerPool
from lyra.services.politeness import GraphPageCounter, GraphRateLimiter
from lyra.services.refresh import RefreshService
from lyra.services.research import ResearchExecutor
from lyra.sources.web import WebFetcher
from lyra.sources.web.ssrf import system_resolver
from tests.support.helpers import stateful_site
from tests.support.passages import CLAIM, DROPPED, KEPT, assert_sums_exact
from tests.support.passages import edges_of as passage_edges

pytestmark = pytest.mark.neo4j
TASK = "fresh_pages"
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
    with stateful_site(Site, _handler) as state:
        yield state


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


def two_passages(*paragraphs: str) -> str:
    body = "".join(f"<p>{p}</p>\n" for p in paragraphs)
    return (
        "<!doctype html><html><head><title>Fasting trials</title></head><body><article>"
        f"<h1>Time-restricted eating and insulin</h1>\n{body}</article></body></html>"
    )


def edges_of(world: World, path: str) -> dict[str, dict[str, Any]]:
    """The claim's stance edges from the page at ``path``, keyed by the passage they judge (KEPT or DROPPED)."""
    records, _, _ = world.graph.store.driver.execute_query(
        "MATCH (p:Page {url: $url}) RETURN p.id AS id",
        {"url": world.site.url(path)},
        database_=world.graph.store.database,
    )
    return passage_edges(world.graph, str(records[0]["id"]), TASK)


def assert_exact(world: World, claim_id: str) -> dict[str, Any]:
    return assert_sums_exact(world.graph, claim_id, TASK)


def evidence_item(world: World, claim_id: str, edge_id: str) -> Any:
    options = MaterialsOptions(evidence_limit=50, include_neutral=True)
    materials = world.graph.operations.get_materials(GetMaterialsRequest(task_id=TASK, options=options))
    (claim,) = [c for c in materials.claims if c.claim_id == claim_id]
    (item,) = [i for i in claim.evidence if i.edge_id == edge_id]
    return claim, item


def url_job_result(world: World, path: str) -> dict[str, Any]:
    records, _, _ = world.graph.store.driver.execute_query(
        "MATCH (j:Job {task_id: $t, value: $url}) WHERE j.state = 'done' "
        "RETURN j.result AS result ORDER BY j.finished_at DESC LIMIT 1",
        {"t": TASK, "url": world.site.url(path)},
        database_=world.graph.store.database,
    )
    return dict(json.loads(records[0]["result"]))


def test_a_passage_that_left_a_changed_page_stops_counting_and_counts_again_when_it_is_back(world: World) -> None:
    graph, site = world.graph, world.site
    site.pages = {"/trials": Page(two_passages(KEPT, DROPPED), etag='"t1"')}
    graph.tasks.create_task(TASK, CLAIM)
    graph.operations.queue_targets(
        QueueTargetsRequest(task_id=TASK, targets=[Target(kind="url", value=site.url("/trials"))])
    )
    world.settle()
    first = edges_of(world, "/trials")
    assert set(first) == {"kept", "dropped"}, first  # both passages were judged against the claim
    assert not first["kept"]["superseded"] and not first["dropped"]["superseded"]
    claim_id = first["dropped"]["claim_id"]
    dropped_id, dropped_rel = first["dropped"]["id"], first["dropped"]["rel"]
    before = assert_exact(world, claim_id)
    counts_key = {"SUPPORTS": "s", "REFUTES": "r", "NEUTRAL": "n"}[dropped_rel]

    # a new version without the second passage: after the refresh and its url job, that edge counts for nothing
    site.pages["/trials"] = Page(two_passages(KEPT), etag='"t2"')
    since = graph.store.driver.execute_query("RETURN toString(datetime()) AS now").records[0]["now"]
    refresh = world.refresh.refresh(RefreshRequest(task_id=TASK, max_targets=5))
    assert refresh.pages is not None and refresh.pages.changed == 1
    world.settle()
    second = edges_of(world, "/trials")
    assert second["dropped"]["id"] == dropped_id and second["dropped"]["superseded"]
    assert second["dropped"]["superseded_at"] and not second["kept"]["superseded"]
    after = assert_exact(world, claim_id)
    assert after[counts_key] == before[counts_key] - 1
    if dropped_rel != "NEUTRAL":
        weight_key = "sw" if dropped_rel == "SUPPORTS" else "rw"
        assert after[weight_key] == pytest.approx(before[weight_key] - second["dropped"]["weight"], abs=1e-9)
    records, _, _ = graph.store.driver.execute_query(
        "MATCH (:Page {url: $url})<-[e:EXTRACTED_FROM]-(f:Fragment) RETURN f.text CONTAINS 'second cohort' AS dropped, "
        "e.superseded_at IS NOT NULL AS superseded",
        {"url": site.url("/trials")},
        database_=graph.store.database,
    )
    assert sorted((r["dropped"], r["superseded"]) for r in records) == [(False, False), (True, True)]
    assert url_job_result(world, "/trials")["passages"] == {
        "superseded": 1,
        "restored": 0,
        "edges_superseded": 1,
        "edges_restored": 0,
    }
    # materials show the item, flagged and weighing nothing; the counts leave it out
    claim, item = evidence_item(world, claim_id, dropped_id)
    assert item.superseded and not item.retracted and item.weight == 0.0
    assert (claim.supports_count, claim.refutes_count) == (after["s"], after["r"])
    # get_changes names the changed page as the cause, the timeline shows the passage leaving
    changes = graph.operations.get_changes(GetChangesRequest(task_id=TASK, since=since))
    (moved,) = [c for c in changes.claims if c.claim_id == claim_id]
    cause = next(c for c in moved.causes if c.kind == "page_changed")
    assert cause.edge_ids == [dropped_id] and cause.restored_edge_ids == []
    assert cause.page is not None and cause.page.url == site.url("/trials")
    timeline = graph.operations.get_claim_timeline(GetClaimTimelineRequest(task_id=TASK, claim_id=claim_id))
    left = [e for e in timeline.events if e.kind == "passage_superseded"]
    assert [e.detail["edge_id"] for e in left] == [dropped_id]

    # an unchanged page read again changes nothing: the edge stays out, the sums stay exact
    site.hits.clear()
    again = world.refresh.refresh(RefreshRequest(task_id=TASK, max_targets=5))
    assert again.pages is not None and again.pages.changed == 0
    world.settle()
    assert assert_exact(world, claim_id) == after

    # a later version brings the passage back: the same fragment, the same edge, counting again
    site.pages["/trials"] = Page(two_passages(KEPT, DROPPED), etag='"t3"')
    since = graph.store.driver.execute_query("RETURN toString(datetime()) AS now").records[0]["now"]
    refresh = world.refresh.refresh(RefreshRequest(task_id=TASK, max_targets=5))
    assert refresh.pages is not None and refresh.pages.changed == 1
    world.settle()
    third = edges_of(world, "/trials")
    assert third["dropped"]["id"] == dropped_id and not third["dropped"]["superseded"]
    assert third["dropped"]["restored_at"]
    restored = assert_exact(world, claim_id)
    assert restored[counts_key] == before[counts_key]
    assert restored["sw"] == pytest.approx(before["sw"], abs=1e-9)
    assert restored["rw"] == pytest.approx(before["rw"], abs=1e-9)
    assert url_job_result(world, "/trials")["passages"]["edges_restored"] == 1
    _, item = evidence_item(world, claim_id, dropped_id)
    assert not item.superseded and item.weight == pytest.approx(third["dropped"]["weight"])
    changes = graph.operations.get_changes(GetChangesRequest(task_id=TASK, since=since))
    (moved,) = [c for c in changes.claims if c.claim_id == claim_id]
    cause = next(c for c in moved.causes if c.kind == "page_changed")
    assert cause.restored_edge_ids == [dropped_id] and cause.edge_ids == []
