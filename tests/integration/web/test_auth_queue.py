"""A human in the loop, end to end: a ``url`` job meets a CAPTCHA page served on 127.0.0.1, is parked
(not failed) with an intervention item, the domain is paused for that task only, get_status / get_auth_queue show
it through MCP (in-memory client) and REST (ASGI transport); a person resolves it with a cookie, the server (which
now accepts the cookie) serves the real article, and the job resumes and ingests it; another item is skipped; task
clean-up removes the items and the cookie. Real Neo4j, real offline models, a real HTTP server, the real worker
pool."""

from __future__ import annotations

import hashlib
import json
import logging
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx
import pytest
from mcp import Client

from lyra.bootstrap import Services, build_http_app
from lyra.core.settings import load_settings
from lyra.mcp.server import create_mcp_server
from lyra.models.api import (
    GetStatusRequest,
    QueueTargetsRequest,
    ResolveAuthRequest,
    StopTaskRequest,
    Target,
    TaskStatus,
)
from lyra.services.interventions import CookieStore
from lyra.services.jobs import WorkerPool
from lyra.services.politeness import GraphPageCounter, GraphRateLimiter
from lyra.services.research import ResearchExecutor
from lyra.sources.search import build_engines
from lyra.sources.web import WebFetcher
from lyra.sources.web.ssrf import system_resolver
from tests.support.helpers import stateful_site, web_search

pytestmark = pytest.mark.neo4j
PASS = "lyra_pass=solved-by-a-person-7f3a"  # what the "browser" got after solving the CAPTCHA
HYPOTHESIS = "Time-restricted eating improves insulin sensitivity in adults"
ARTICLE = """<!doctype html><html><head><title>Fasting trial {n}</title>
<meta name="citation_publication_date" content="2022/09/14">
</head><body><article><h1>Time-restricted eating in adults ({n})</h1>
<p>In a randomized trial of 90 adults, eating within an eight-hour window for twelve weeks improved insulin
sensitivity compared with usual eating, independently of weight loss. Fasting insulin fell by eleven percent and
the effect persisted at a follow-up visit three months after the intervention ended.</p>
</article></body></html>"""
CAPTCHA = """<!doctype html><html><head><title>Just a moment...</title>
<script src="https://www.google.com/recaptcha/api.js" async defer></script></head>
<body><div class="box"><h1>One more step</h1><p>Please complete the security check to access the journal.</p>
<form action="/verify" method="post"><div class="g-recaptcha" data-sitekey="6LcXtest"></div>
<button type="submit">Continue</button></form></div></body></html>"""
LOGIN = """<!doctype html><html><head><title>Sign in</title></head><body><h1>Sign in</h1>
<form action="/session" method="post"><input type="email" name="email"><input type="password" name="password">
<button>Sign in</button></form></body></html>"""


@dataclass
class Site:
    port: int
    hits: list[tuple[str, str, str | None]] = field(default_factory=list)  # (host, path, Cookie header)

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"

    def paths(self, host: str) -> list[str]:
        return [path for h, path, _ in self.hits if h == host and path != "/robots.txt"]


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, body: str, ctype: str = "text/html; charset=utf-8") -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
            cookie = self.headers.get("Cookie")
            site.hits.append((host, self.path, cookie))
            if self.path == "/robots.txt":
                self._send(404, "none", "text/plain")
            elif host == "journal.test" and self.path.startswith("/article/"):
                if cookie and PASS in cookie:
                    self._send(200, ARTICLE.format(n=self.path.rsplit("/", 1)[1]))
                else:
                    self._send(403, CAPTCHA)
            elif host == "members.test":
                self._send(200, LOGIN)
            elif host == "searx.test" and self.path.startswith("/search"):  # a SearXNG answering a query job
                self._send(200, searx_answer(site), "application/json")
            elif host == "open.test" and self.path == "/paper":
                self._send(200, ARTICLE.format(n="open"))
            else:
                self._send(404, "<html><body>not here</body></html>")

    return Handler


def searx_answer(site: Site) -> str:
    """SearXNG's JSON for any query: an article behind the CAPTCHA first, then an open one."""
    hits = [("journal.test", "/article/7", "Fasting trial 7"), ("open.test", "/paper", "Open fasting trial")]
    results = [
        {"url": site.url(host, path), "title": title, "content": "Time-restricted eating and insulin sensitivity.",
         "engine": "bing", "engines": ["bing"], "positions": [rank], "score": 1.0 / rank, "category": "general"}
        for rank, (host, path, title) in enumerate(hits, start=1)
    ]  # fmt: skip
    return json.dumps({"query": "q", "number_of_results": 0, "results": results, "unresponsive_engines": []})


@pytest.fixture
def site() -> Iterator[Site]:
    with stateful_site(Site, _handler) as state:
        yield state


def resolver(host: str, port: int) -> list[str]:
    if host.endswith(".test"):
        return ["127.0.0.1"]
    return system_resolver(host, port)


@dataclass
class World:
    graph: Services
    site: Site
    pool: WorkerPool
    cookie_file: Path

    def queue(self, task_id: str, *urls: str, kind: Literal["url", "query"] = "url") -> None:
        targets = [Target(kind=kind, value=u) for u in urls]
        self.graph.operations.queue_targets(QueueTargetsRequest(task_id=task_id, targets=targets))

    def settle(self, task_id: str) -> TaskStatus:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            status = self.graph.operations.get_status(GetStatusRequest(task_id=task_id, wait=1, detail="full"))
            if status.jobs.queued + status.jobs.running == 0:
                return status
        raise AssertionError(f"the jobs of {task_id} did not settle")

    def mcp(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
        server = create_mcp_server(self.graph.operations)

        async def run() -> tuple[bool, Any]:
            async with Client(server) as client:
                result = await client.call_tool(tool, arguments)
                if result.is_error:
                    text = result.content[0].text  # type: ignore[union-attr]
                    return True, json.loads(text[text.index("{") :])
                return False, result.structured_content

        return anyio.run(run)

    def rest(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        app = build_http_app(self.graph, workers=False, mcp=False)

        async def run() -> httpx.Response:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
                return await client.request(method, path, **kwargs)

        return anyio.run(run)


@pytest.fixture
def world(graph: Services, site: Site, tmp_path: Path) -> Iterator[World]:
    original = graph.interventions.cookies
    cookie_file = tmp_path / "state" / "auth" / "cookies.json"
    graph.interventions.cookies = CookieStore(cookie_file)  # the services' one store: status and clean-up use it
    settings = load_settings(
        fetch_allow_hosts=["127.0.0.1"],
        web_timeout_seconds=10.0,
        neo4j_password=graph.settings.neo4j.neo4j_password,
        searxng_url=site.url("searx.test", ""),
        web_search_engines=["searxng"],
        web_pages_per_query=2,
    )
    fetcher = WebFetcher.from_settings(
        settings,
        gate=graph.domains,
        counter=GraphPageCounter(graph.store),
        limiter=GraphRateLimiter(graph.store),
        resolver=resolver,
    )
    engines, notes = build_engines(settings.search, settings.web.chromium_path, fetcher)
    search = web_search(graph, settings, fetcher, engines, notes, interventions=graph.interventions)
    executor = ResearchExecutor(
        graph.store,
        lambda: graph.ingest,
        graph.settings.paths.allowed_roots,
        web=lambda: fetcher,
        search=lambda: search,
        interventions=graph.interventions,
    )
    pool = WorkerPool(graph.store, executor, poll_seconds=0.1, heartbeat_seconds=0.5)
    graph.jobs.on_queued(pool.wake)
    pool.start()
    try:
        yield World(graph, site, pool, cookie_file)
    finally:
        pool.stop()
        for engine in engines:
            engine.close()
        fetcher.close()
        graph.jobs._listeners.remove(pool.wake)
        graph.interventions.cookies = original


def count(graph: Services, cypher: str, **params: Any) -> int:
    records, _, _ = graph.store.driver.execute_query(cypher, params, database_=graph.store.database)
    return int(records[0][0])


def test_a_captcha_parks_the_job_pauses_the_domain_and_a_cookie_from_a_person_lets_it_resume(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="lyra")
    graph, site = world.graph, world.site
    graph.tasks.create_task("trf_walls", HYPOTHESIS)
    graph.tasks.create_task("trf_other", HYPOTHESIS)

    # 1. the CAPTCHA: the job waits for a person, nothing of the page is read
    world.queue("trf_walls", site.url("journal.test", "/article/1"))
    status = world.settle("trf_walls")
    (job,) = status.job_list or []
    assert job.state == "waiting" and job.error is not None and "captcha" in job.error
    assert status.jobs.waiting == 1 and status.jobs.failed == 0 and status.milestones.needs_person
    assert status.interventions is not None and status.interventions.pending == 1
    assert status.interventions.paused_domains == ["journal.test"]
    (item,) = status.interventions.items
    assert item.kind == "captcha" and item.status == "pending" and item.job_id == job.id and item.attempts == 1
    assert "g-recaptcha" in item.reason and item.url == site.url("journal.test", "/article/1")
    assert status.metrics.pages == 0 and count(graph, "MATCH (p:Page) RETURN count(p)") == 0

    # 2. the domain is paused for this task: its next job there waits without asking the site
    world.queue("trf_walls", site.url("journal.test", "/article/2"))
    status = world.settle("trf_walls")
    assert status.jobs.waiting == 2 and status.interventions is not None
    assert status.interventions.pending == 1 and status.interventions.held_jobs == 1
    held = next(j for j in status.job_list or [] if j.value.endswith("/article/2"))
    assert held.error is not None and "journal.test is paused for this task" in held.error
    assert site.paths("journal.test") == ["/article/1"]

    # 3. ...for this task only: another task's job on the same domain asks the site and gets its own item
    world.queue("trf_other", site.url("journal.test", "/article/3"))
    other = world.settle("trf_other")
    assert other.jobs.waiting == 1 and other.interventions is not None and other.interventions.pending == 1
    assert site.paths("journal.test") == ["/article/1", "/article/3"]
    other_item = other.interventions.items[0].id

    # 4. MCP and REST show the same queue
    error, queue = world.mcp("get_auth_queue", {"task_id": "trf_walls"})
    assert not error and queue["pending"] == 1 and queue["paused_domains"] == ["journal.test"]
    assert queue["held_jobs"] == 1 and [i["id"] for i in queue["items"]] == [item.id]
    rest_queue = world.rest("GET", "/api/v1/tasks/trf_walls/auth-queue")
    assert rest_queue.status_code == 200 and rest_queue.json()["items"] == queue["items"]
    error, mcp_status = world.mcp("get_status", {"task_id": "trf_walls"})
    assert not error and mcp_status["interventions"]["pending"] == 1 and mcp_status["jobs"]["waiting"] == 2

    # 5. bad input: clear errors, nothing resolved
    resolve = f"/api/v1/tasks/trf_walls/auth-queue/{item.id}/resolve"
    no_cookie = world.rest("POST", resolve, json={"action": "cookie"})
    assert no_cookie.status_code == 422 and no_cookie.json()["field"] == "cookie"
    bad_cookie = world.rest("POST", resolve, json={"action": "cookie", "cookie": "a=b\r\nX-Evil: 1"})
    assert bad_cookie.status_code == 422 and bad_cookie.json()["field"] == "cookie"
    assert "X-Evil" not in bad_cookie.text  # the secret is not echoed
    wrong_action = world.rest("POST", resolve, json={"action": "solve"})
    assert wrong_action.status_code == 422 and wrong_action.json()["field"] == "action"
    unknown = world.rest(
        "POST", "/api/v1/tasks/trf_walls/auth-queue/iv_" + "0" * 32 + "/resolve", json={"action": "retry"}
    )
    assert unknown.status_code == 404 and unknown.json()["error"] == "not_found"
    wrong_task = world.rest("POST", f"/api/v1/tasks/trf_walls/auth-queue/{other_item}/resolve", json={"action": "skip"})
    assert wrong_task.status_code == 422 and wrong_task.json()["field"] == "intervention_id"
    error, out = world.mcp(
        "resolve_auth", {"task_id": "trf_walls", "intervention_id": item.id, "action": "retry", "cookie": PASS}
    )
    assert error and out["field"] == "cookie"
    assert world.settle("trf_walls").interventions.pending == 1  # type: ignore[union-attr]

    # 6. a person solved it in their browser and hands over the cookie: both jobs resume and read the article
    resolved = world.rest("POST", resolve, json={"action": "cookie", "cookie": PASS, "resolver": "alice"})
    assert resolved.status_code == 200, resolved.text
    body = resolved.json()
    assert body["status"] == "resolved" and body["job_state"] == "queued" and body["released_jobs"] == 1
    assert body["cookie_stored"] and not body["domain_paused"] and PASS not in resolved.text
    again = world.rest("POST", resolve, json={"action": "retry"})
    assert again.status_code == 409 and again.json()["error"] == "conflict"
    status = world.settle("trf_walls")
    assert status.jobs.done == 2 and status.jobs.waiting == 0, status.errors
    assert not status.milestones.needs_person and status.interventions is not None
    assert status.interventions.pending == 0 and status.interventions.resolved == 1
    assert status.interventions.paused_domains == []
    with_cookie = [
        (path, c) for h, path, c in site.hits if h == "journal.test" and path in ("/article/1", "/article/2")
    ]
    assert [p for p, _ in with_cookie] == ["/article/1", "/article/1", "/article/2"]
    assert with_cookie[0][1] is None and with_cookie[1][1] == PASS and with_cookie[2][1] == PASS
    assert not any(c for h, p, c in site.hits if p == "/robots.txt")  # the cookie goes to pages only
    assert count(graph, "MATCH (p:Page) WHERE p.year = 2022 RETURN count(p)") == 2
    assert sum(status.metrics.edges.values()) >= 1  # the two pages' near-identical texts make one fragment
    assert (
        count(graph, "MATCH (i:Intervention {status: 'resolved', action: 'cookie', resolver: 'alice'}) RETURN count(i)")
        == 1
    )

    # the cookie is a secret: owner-only file, never in the graph, in a read, or in the log
    assert stat.S_IMODE(world.cookie_file.stat().st_mode) == 0o600
    anywhere = "MATCH (n) WHERE any(k IN keys(n) WHERE n[k] IS :: STRING AND n[k] CONTAINS $v) RETURN count(n)"
    assert count(graph, anywhere, v=PASS) == 0
    error, queue = world.mcp("get_auth_queue", {"task_id": "trf_walls", "status": "all"})
    assert not error and queue["items"][0]["cookie_stored"] is True and PASS not in json.dumps(queue)
    assert PASS not in caplog.text

    # 7. skip: the other task's job ends as skipped with the note; the domain unpauses for it
    error, skipped = world.mcp(
        "resolve_auth", {"task_id": "trf_other", "intervention_id": other_item, "action": "skip", "note": "paywalled"}
    )
    assert not error and skipped["status"] == "skipped" and skipped["job_state"] == "skipped"
    other = world.settle("trf_other")
    assert other.jobs.skipped == 1 and other.jobs.waiting == 0 and other.status == "completed"
    (skipped_job,) = other.job_list or []
    assert skipped_job.error == "skipped by a person: paywalled"
    assert site.paths("journal.test").count("/article/3") == 1  # not asked again

    # 8. clean-up: the items and the cookie go with the task
    assert count(graph, "MATCH (i:Intervention) RETURN count(i)") == 2
    graph.operations.stop_task(StopTaskRequest(task_id="trf_walls", cleanup="soft"))
    assert count(graph, "MATCH (i:Intervention {task_id: 'trf_walls'}) RETURN count(i)") == 0
    assert world.graph.interventions.cookies.for_task("trf_walls") == {}
    report = graph.cleanup.cleanup("trf_other", "soft")
    assert report.removed.interventions == 1 and report.after.interventions == 0


def test_a_login_wall_is_parked_and_a_retry_that_meets_it_again_reopens_the_same_item(world: World) -> None:
    graph, site = world.graph, world.site
    graph.tasks.create_task("members_wall", HYPOTHESIS)
    world.queue("members_wall", site.url("members.test", "/paper/5"))
    status = world.settle("members_wall")
    assert status.interventions is not None
    (item,) = status.interventions.items
    assert item.kind == "login_wall" and "password field" in item.reason
    error, out = world.mcp("resolve_auth", {"task_id": "members_wall", "intervention_id": item.id, "action": "retry"})
    assert not error and out["job_state"] == "queued" and not out["cookie_stored"]
    status = world.settle("members_wall")
    assert status.interventions is not None and status.interventions.pending == 1
    (again,) = status.interventions.items
    assert again.id == item.id and again.attempts == 2 and again.action == "retry"  # the last resolution stays
    assert site.paths("members.test") == ["/paper/5", "/paper/5"]


def test_a_query_job_skips_a_domain_paused_for_its_task_and_sends_the_cookie_a_person_gave(world: World) -> None:
    graph, site = world.graph, world.site
    graph.tasks.create_task("trf_query", HYPOTHESIS)
    world.queue("trf_query", site.url("journal.test", "/article/6"))
    status = world.settle("trf_query")
    assert status.interventions is not None and status.interventions.paused_domains == ["journal.test"]
    (item,) = status.interventions.items

    # the search finds an article on the paused domain first: it is not fetched, the open one is read
    world.queue("trf_query", "time-restricted eating insulin sensitivity", kind="query")
    status = world.settle("trf_query")
    query_job = next(j for j in status.job_list or [] if j.kind == "query")
    assert query_job.state == "done" and query_job.result is not None, query_job.error
    fates = {c["url"]: (c["fate"], c.get("code"), c.get("reason")) for c in query_job.result["web"]["candidates"]}
    paused = fates[site.url("journal.test", "/article/7")]
    assert paused[:2] == ("paused", "domain_paused") and "until a person resolves" in str(paused[2])
    assert fates[site.url("open.test", "/paper")][:2] == ("read", "ok")
    assert "/article/7" not in site.paths("journal.test")
    # a page a web search read keeps its content hash, for a later refresh's re-check
    expected_hash = hashlib.sha256(ARTICLE.format(n="open").encode()).hexdigest()
    assert count(graph, "MATCH (p:Page {content_hash: $h}) RETURN count(p)", h=expected_hash) == 1

    # a person hands over the cookie: the next query job reads the article, sending it (to that domain only)
    graph.operations.resolve_auth(
        ResolveAuthRequest(task_id="trf_query", intervention_id=item.id, action="cookie", cookie=PASS)
    )
    world.queue("trf_query", "insulin sensitivity and time-restricted eating", kind="query")
    status = world.settle("trf_query")
    second = [j for j in status.job_list or [] if j.kind == "query" and j.id != query_job.id]
    assert second and second[0].state == "done" and second[0].result is not None, second
    fates = {c["url"]: c["fate"] for c in second[0].result["web"]["candidates"]}
    assert fates[site.url("journal.test", "/article/7")] == "read"
    sent = [c for h, p, c in site.hits if h == "journal.test" and p == "/article/7"]
    assert sent == [PASS]
    assert all(c is None for h, p, c in site.hits if h in ("open.test", "searx.test"))
