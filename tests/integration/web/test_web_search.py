"""`query` jobs through the web search: a local web on 127.0.0.1 serves a SearXNG JSON API, a
DuckDuckGo-HTML-style results page and the article pages the results point to; the real fetcher (SSRF guard, domain
gate, robots.txt, politeness), the real Neo4j, the real offline embedder, ranker and stance judge, and (``browser``)
real chromium driven by Playwright.

Test host names (``*.test``, ``malware.example``) are mapped to 127.0.0.1 by the fetcher's resolver hook, except
``internal.test`` (127.0.0.2, outside the allow-list); any other name fails to resolve, as without a network. Each
test checks what the server was asked, so "never fetched" is measured, not assumed."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from lyra.bootstrap import Services
from lyra.core.settings import Settings
from lyra.models.api import GetStatusRequest, QueueTargetsRequest, Target, TargetOptions, TaskStatus
from lyra.services.jobs import WorkerPool
from lyra.services.research import ResearchExecutor
from lyra.services.web_search import WebSearchRun
from lyra.sources.search import BrowserSerpEngine, SearchEngine, SearxngEngine, build_engines
from lyra.sources.web import FetchRefused, WebFetcher, origin_of
from lyra.sources.web.browser import ChromiumRenderer
from lyra.sources.web.ssrf import system_resolver
from tests.support.helpers import stateful_site, web_search

pytestmark = pytest.mark.neo4j
CLAIM = "Drinking coffee in the afternoon reduces sleep duration in adults"
QUERY = "afternoon coffee sleep"

COFFEE = """<!doctype html><html><head><title>Afternoon coffee and sleep</title>
<meta name="citation_publication_date" content="2022/09/01"></head><body><article>
<h1>Afternoon coffee shortens sleep</h1>
<p>In a cohort of 1,200 adults, drinking coffee after 3 pm reduced total sleep duration by 41 minutes on average
compared with not drinking coffee in the afternoon, and the effect grew with the dose.</p>
<p>Participants who stopped afternoon coffee for two weeks slept longer and fell asleep faster.</p>
</article></body></html>"""
TRIAL = """<!doctype html><html><head><title>Caffeine timing trial</title>
<meta name="citation_doi" content="10.5555/lyra.search.2021.4">
<meta name="citation_publication_date" content="2021/03/15"></head><body><article>
<h1>Caffeine six hours before bed</h1>
<p>In a randomised crossover trial, 400 mg of caffeine taken six hours before bedtime reduced sleep duration by more
than one hour in healthy adults, measured by polysomnography.</p>
<p>The authors build on an earlier report (doi:10.5555/lyra.search.2017.9) on caffeine and sleep latency.</p>
</article></body></html>"""
CAKE = """<!doctype html><html><head><title>Chocolate cake</title></head><body><article>
<h1>The best chocolate cake</h1><p>Mix flour, sugar, cocoa and eggs; bake for forty minutes at 180 degrees and let
the cake cool before adding the ganache. Serve with cream.</p></article></body></html>"""

# (host, path, title, snippet): the engines' answer, in the engines' order; the cake recipe comes first on purpose
RESULTS = [
    ("recipes.test", "/cake", "Chocolate cake recipe", "Flour, sugar, cocoa and eggs: the best chocolate cake."),
    (
        "internal.test",
        "/notes",
        "Coffee and sleep notes",
        "Drinking coffee in the afternoon reduces sleep duration in adults: notes on afternoon coffee and sleep.",
    ),
    (
        "news.test",
        "/coffee",
        "Afternoon coffee shortens sleep in adults",
        "Drinking coffee after 3 pm reduced sleep duration by 41 minutes (doi:10.5555/lyra.search.2022.3).",
    ),
    (
        "malware.example",
        "/free-sleep",
        "Afternoon coffee and sleep: free download",
        "Coffee in the afternoon reduces sleep duration in adults.",
    ),
    ("journal.test", "/trial", "Caffeine timing and sleep duration", "Caffeine before bedtime reduced sleep duration."),
    ("news.test", "/coffee?utm_source=searx", "Afternoon coffee shortens sleep (repost)", "The same article again."),
]


@dataclass
class Web:
    port: int
    hits: list[tuple[str, str, str]] = field(default_factory=list)  # (host, path, user agent)

    def paths(self, host: str) -> list[str]:
        return [p for h, p, _ in self.hits if h == host]

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"


def searxng_json(web: Web, query: str, pageno: int) -> bytes:
    results = [
        {
            "url": web.url(host, path),
            "title": title,
            "content": snippet,
            "engine": "bing",
            "engines": ["bing", "brave"],
            "positions": [rank],
            "score": 1.0 / rank,
            "category": "general",
            "publishedDate": None,
            "template": "default.html",
        }
        for rank, (host, path, title, snippet) in enumerate(RESULTS, start=1)
    ]
    answer = {
        "query": query,
        "number_of_results": 0,
        "results": results if pageno == 1 else [],
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": [],
        "unresponsive_engines": [["google", "timeout"]],
    }
    return json.dumps(answer).encode()


def serp_html(web: Web, query: str) -> bytes:
    """A results page in html.duckduckgo.com's shape, with an advert first and a stylesheet chromium will ask for."""
    blocks = [
        '<div class="result results_links results_links_deep result--ad "><div class="links_main links_deep '
        'result__body"><h2 class="result__title"><a rel="nofollow" class="result__a" '
        'href="https://duckduckgo.com/y.js?ad_domain=decaf.example&amp;ad_provider=bingv7aa">Decaf sale</a></h2>'
        '<a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=decaf.example">Sleep better</a>'
        "</div></div>"
    ]
    for host, path, title, snippet in RESULTS:
        link = "//duckduckgo.com/l/?uddg=" + quote(web.url(host, path), safe="") + "&amp;rut=4f1e"
        blocks.append(
            '<div class="result results_links results_links_deep web-result "><div class="links_main links_deep '
            f'result__body"><h2 class="result__title"><a rel="nofollow" class="result__a" href="{link}">{title}</a>'
            f'</h2><div class="result__extras"><div class="result__extras__url"><a class="result__url" href="{link}">'
            f'{host}{path}</a></div></div><a class="result__snippet" href="{link}">{snippet}</a>'
            '<div class="clear"></div></div></div>'
        )
    page = (
        '<!DOCTYPE html><html><head><meta http-equiv="content-type" content="text/html; charset=UTF-8">'
        f'<title>{query} at DuckDuckGo</title><link rel="stylesheet" href="/dist/h.css" type="text/css"/></head>'
        '<body class="body--html"><div id="links" class="results">' + "".join(blocks) + "</div></body></html>"
    )
    return page.encode()


def _handler(web: Web) -> type[BaseHTTPRequestHandler]:
    pages = {("news.test", "/coffee"): COFFEE, ("journal.test", "/trial"): TRIAL, ("recipes.test", "/cake"): CAKE}
    pages[("internal.test", "/notes")] = pages[("malware.example", "/free-sleep")] = COFFEE

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

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
            web.hits.append((host, self.path, self.headers.get("User-Agent") or ""))
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._route(host)

        def _route(self, host: str) -> None:
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            if parts.path == "/robots.txt":
                if host in ("searx.test", "127.0.0.1"):  # what SearXNG itself serves
                    self._send(200, b"User-agent: *\nDisallow: /stats\nDisallow: /*?*q=*\n", "text/plain")
                else:
                    self._send(200, b"User-agent: *\nAllow: /\n", "text/plain")
            elif host in ("searx.test", "127.0.0.1") and parts.path == "/search":
                assert query["format"] == ["json"]
                pageno = int(query.get("pageno", ["1"])[0])
                self._send(200, searxng_json(web, query["q"][0], pageno), "application/json")
            elif host == "127.0.0.1" and parts.path == "/go-internal":  # a redirect off the trusted origin
                self.send_response(302)
                self.send_header("Location", web.url("internal.test", "/notes"))
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif host == "127.0.0.1" and parts.path == "/go-search":  # a redirect within the trusted origin
                self.send_response(302)
                self.send_header("Location", "/search?q=coffee&format=json")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif host == "broken.test":  # a SearXNG behind a login page: HTML where JSON was asked for
                self._send(200, b"<html><body><form>Sign in</form></body></html>", "text/html")
            elif host == "serp.test" and parts.path == "/html/":
                self._send(200, serp_html(web, query["q"][0]), "text/html; charset=utf-8")
            elif host == "serp.test" and parts.path == "/dist/h.css":
                self._send(200, b".result__a { color: #1a0dab; }", "text/css")
            elif (host, parts.path) in pages:
                self._send(200, pages[(host, parts.path)].encode(), "text/html; charset=utf-8")
            else:
                self._send(404, b"not here", "text/plain")

    return Handler


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass


@pytest.fixture
def web() -> Iterator[Web]:
    with stateful_site(Web, _handler, _Server) as state:
        yield state


def resolver(host: str, port: int) -> list[str]:
    """The test web: ``internal.test`` is another loopback address (outside the allow-list); no other names."""
    if host == "internal.test":
        return ["127.0.0.2"]
    if host.endswith(".test") or host == "malware.example":
        return ["127.0.0.1"]
    if host == "127.0.0.1":
        return system_resolver(host, port)
    raise OSError(f"no network in tests: {host}")


def search_settings(graph: Services, web: Web, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "fetch_allow_hosts": ["127.0.0.1"],
        "web_timeout_seconds": 30.0,
        "searxng_url": web.url("searx.test", ""),
        "serp_url": web.url("serp.test", "/html/"),
        "web_search_engines": ["searxng"],
        "web_pages_per_query": 2,
        "web_search_results": 20,
    }
    values.update(overrides)
    return graph.settings.model_copy(update=values)


def run_query(graph: Services, executor: ResearchExecutor, task_id: str, query: str, **options: Any) -> TaskStatus:
    pool = WorkerPool(graph.store, executor, poll_seconds=0.1, heartbeat_seconds=0.5)
    target = Target(kind="query", value=query, options=TargetOptions(**options))
    graph.operations.queue_targets(QueueTargetsRequest(task_id=task_id, targets=[target]))
    pool.start()
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            status = graph.operations.get_status(GetStatusRequest(task_id=task_id, wait=2, detail="full"))
            if status.jobs.queued + status.jobs.running == 0:
                return status
        raise AssertionError("the query job did not finish")
    finally:
        pool.stop()


def job_result(status: TaskStatus) -> dict[str, Any]:
    (job,) = status.job_list or []
    assert job.state == "done", job.error
    assert job.result is not None
    return job.result


def fates(result: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    """host+path(+?query) -> (fate, code) of every candidate."""
    out: dict[str, tuple[str, str | None]] = {}
    for candidate in result["web"]["candidates"]:
        parts = urlsplit(candidate["url"])
        key = f"{parts.hostname}{parts.path}" + (f"?{parts.query}" if parts.query else "")
        out[key] = (candidate["fate"], candidate.get("code"))
    return out


def task_pages(graph: Services, task_id: str) -> list[dict[str, Any]]:
    records, _, _ = graph.store.driver.execute_query(
        "MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(:Claim)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment)"
        "-[:EXTRACTED_FROM]->(p:Page) RETURN p.url AS url, p.year AS year, p.doi AS doi, count(r) AS edges "
        "ORDER BY url",
        {"task_id": task_id},
        database_=graph.store.database,
    )
    return [r.data() for r in records]


# ----------------------------------------------------------------------------- SearXNG → pages → stance edges
def test_a_query_job_searches_searxng_ranks_the_results_and_reads_the_best_pages_into_the_graph(
    graph: Services, web: Web
) -> None:
    graph.tasks.create_task("web_q", CLAIM)
    settings = search_settings(graph, web)
    with WebFetcher.from_settings(settings, gate=graph.domains, resolver=resolver) as fetcher:
        engines, _ = build_engines(settings.search, settings.web.chromium_path, fetcher)
        search = web_search(graph, settings, fetcher, engines)
        executor = ResearchExecutor(
            graph.store, lambda: graph.ingest, settings.paths.allowed_roots, web=lambda: fetcher, search=lambda: search
        )
        status = run_query(graph, executor, "web_q", QUERY)
    result = job_result(status)
    assert result["web"]["engine"] == "searxng"
    assert result["web"]["results"] == len(RESULTS)
    assert "searxng: its engine google did not answer (timeout)" in result["web"]["warnings"]
    got = fates(result)
    # the cake recipe came first from the engine; its title and snippet are below the relevance floor: never fetched
    assert got["recipes.test/cake"] == ("below_floor", "below_relevance_floor")
    assert got["news.test/coffee"] == ("read", "ok") and got["journal.test/trial"] == ("read", "ok")
    assert got["malware.example/free-sleep"] == ("blocked", "blocked_domain")  # the denylist: dropped before fetching
    assert got["internal.test/notes"] == ("refused", "ssrf_refused")  # ranked first, refused, made room for the next
    assert got["news.test/coffee?utm_source=searx"][0] == "duplicate"
    internal = next(c for c in result["web"]["candidates"] if "internal.test" in c["url"])
    assert "127.0.0.2" in internal["reason"] and "LYRA_FETCH_ALLOW_HOSTS" in internal["reason"]
    scores = {urlsplit(c["url"]).hostname: c["score"] for c in result["web"]["candidates"] if "score" in c}
    assert scores["recipes.test"] < min(scores["news.test"], scores["journal.test"], scores["internal.test"])
    assert result["web"]["pages_read"] == 2 and result["documents"] == 2
    # the academic search is asked for (LYRA_ACADEMIC_SEARCH=always) but this executor has no academic sources: the
    # result says it did not search, and why
    assert result["academic"]["searched"] is False
    assert "academic sources are not configured" in result["academic"]["reason"]
    # identifiers: one from a result snippet, two from the trial page (its meta tag and its text)
    assert {
        "doi:10.5555/lyra.search.2022.3",
        "doi:10.5555/lyra.search.2021.4",
        "doi:10.5555/lyra.search.2017.9",
    } <= set(result["identifiers"])
    # what the server saw: never the blocked domain, never the internal host, never the cake; SearXNG's robots.txt
    # (Disallow: /*?*q=*) was not asked for the search request
    assert web.paths("malware.example") == [] and web.paths("internal.test") == [] and web.paths("recipes.test") == []
    assert "/robots.txt" not in web.paths("searx.test")
    assert web.paths("news.test") == ["/robots.txt", "/coffee"]
    assert all(agent.startswith("Lyra/") for _, _, agent in web.hits)
    pages = task_pages(graph, "web_q")
    assert {p["url"] for p in pages} == {web.url("news.test", "/coffee"), web.url("journal.test", "/trial")}
    assert {(p["year"], p["doi"]) for p in pages} == {(2022, None), (2021, "10.5555/lyra.search.2021.4")}
    assert all(p["edges"] >= 1 for p in pages)

    # the same query again: both pages are known to the task and are not fetched again
    web.hits.clear()
    with WebFetcher.from_settings(settings, gate=graph.domains, resolver=resolver) as fetcher:
        engines, _ = build_engines(settings.search, settings.web.chromium_path, fetcher)
        search = web_search(graph, settings, fetcher, engines)
        run = WebSearchRun(query=QUERY)
        ranked = search.candidates("web_q", QUERY, [CLAIM], search.search(QUERY, run), run)
    known = {urlsplit(c.url).path for c in run.candidates if c.fate == "already_read"}
    assert known == {"/coffee", "/trial"} and all("/coffee" not in c.url for c in ranked)


# ----------------------------------------------------------------------------- the relevance floor
def test_results_below_the_relevance_floor_are_never_fetched_even_with_room_for_more_pages(
    graph: Services, web: Web
) -> None:
    settings = search_settings(graph, web)
    with WebFetcher.from_settings(settings, gate=graph.domains, resolver=resolver) as fetcher:
        engines, _ = build_engines(settings.search, settings.web.chromium_path, fetcher)
        search = web_search(graph, settings, fetcher, engines)
        run = WebSearchRun(query=QUERY)
        ranked = search.candidates("web_floor", QUERY, [CLAIM], search.search(QUERY, run), run)
        # room for ten pages: before the floor the cake recipe was fetched as the last candidate standing
        documents = search.fetch(ranked, 10, lambda *_: None, run)
    by_host = {urlsplit(c.url).hostname: c for c in run.candidates if c.fate not in ("duplicate", "blocked")}
    cake = by_host["recipes.test"]
    assert (cake.fate, cake.code) == ("below_floor", "below_relevance_floor")
    assert cake.relevance is not None and cake.relevance < settings.pipeline.relevance_floor
    assert f"LYRA_RELEVANCE_FLOOR={settings.pipeline.relevance_floor:g}" in (cake.reason or "")
    assert all(
        c.relevance is not None and c.relevance >= settings.pipeline.relevance_floor
        for host, c in by_host.items()
        if host != "recipes.test"
    )
    assert web.paths("recipes.test") == []  # what the server saw: never the cake
    assert {urlsplit(d.url).path for d in documents} == {"/coffee", "/trial"}
    shown = run.as_dict()
    assert shown["relevance_floor"] == settings.pipeline.relevance_floor and shown["below_floor"] == 1
    (listed,) = [c for c in shown["candidates"] if c["fate"] == "below_floor"]
    assert listed["relevance"] == round(cake.relevance, 4) and "score" in listed

    # without claims the query is what the results are held to
    run = WebSearchRun(query=QUERY)
    web.hits.clear()
    with WebFetcher.from_settings(settings, gate=graph.domains, resolver=resolver) as fetcher:
        engines, _ = build_engines(settings.search, settings.web.chromium_path, fetcher)
        search = web_search(graph, settings, fetcher, engines)
        ranked = search.candidates("web_floor", QUERY, [], search.search(QUERY, run), run)
        # one page wanted: the next relevant candidate is not fetched (the page count), the cake is below the floor
        search.fetch(ranked, 1, lambda *_: None, run)
    fates_now = {urlsplit(c.url).hostname: c.fate for c in run.candidates if c.fate not in ("duplicate", "blocked")}
    assert fates_now["recipes.test"] == "below_floor" and "not_fetched" in fates_now.values()
    assert "the query" in next(c.reason or "" for c in run.candidates if c.fate == "below_floor")


# ----------------------------------------------------------------------------- engines failing
def test_an_engine_that_fails_leaves_a_warning_naming_it_and_the_next_engine_is_used(graph: Services, web: Web) -> None:
    settings = search_settings(graph, web)
    with WebFetcher.from_settings(settings, gate=graph.domains, resolver=resolver) as fetcher:
        engines: list[SearchEngine] = [
            SearxngEngine(web.url("broken.test", ""), fetcher),
            # the browser engine where chromium is missing: the results page is parsed as fetched
            BrowserSerpEngine(
                settings.search.serp_url, fetcher, lambda: ChromiumRenderer(Path("/nonexistent/chromium"))
            ),
        ]
        search = web_search(graph, settings, fetcher, engines)
        run = WebSearchRun(query=QUERY)
        results = search.search(QUERY, run)
    assert run.engine == "browser" and len(results) == len(RESULTS)  # the advert is not a result
    assert [e["state"] for e in run.engines] == ["failed", "answered"]
    assert run.engines[0]["code"] == "bad_answer" and "not JSON" in run.engines[0]["error"]
    assert any(w.startswith("web search engine searxng failed (bad_answer)") for w in run.warnings)
    assert any("chromium did not render" in w and "/nonexistent/chromium" in w for w in run.warnings)
    assert results[0].url == web.url("recipes.test", "/cake")  # the advert before it was skipped
    assert web.paths("duckduckgo.com") == []  # redirect links are decoded, never followed


def test_no_engine_answering_is_a_warning_and_the_configured_endpoint_alone_is_trusted(
    graph: Services, web: Web
) -> None:
    # no allow-list at all: SearXNG on 127.0.0.1 answers (its origin is trusted), the pages it names on 127.0.0.1 are
    # refused by the SSRF guard like any private address
    settings = search_settings(graph, web, fetch_allow_hosts=[], searxng_url=web.url("127.0.0.1", ""))
    with WebFetcher.from_settings(settings, gate=graph.domains, resolver=resolver) as fetcher:
        engines, _ = build_engines(settings.search, settings.web.chromium_path, fetcher)
        search = web_search(graph, settings, fetcher, engines)
        run = WebSearchRun(query=QUERY)
        results = search.search(QUERY, run)
        assert run.engine == "searxng" and len(results) == len(RESULTS)
        fetched = search.fetch(search.candidates("web_trust", QUERY, [CLAIM], results, run), 2, lambda *_: None, run)
    assert fetched == []
    refused = [c for c in run.candidates if c.fate == "refused"]
    assert refused and {c.code for c in refused} == {"ssrf_refused"}
    assert web.paths("news.test") == [] and web.paths("journal.test") == []

    # the trust covers exactly that origin: a redirect within it is followed, a redirect off it is checked as usual
    origin = origin_of(web.url("127.0.0.1", ""))
    with WebFetcher.from_settings(settings, gate=graph.domains, resolver=resolver) as fetcher:
        assert fetcher.get(web.url("127.0.0.1", "/go-search"), robots=False, trusted_origin=origin).status == 200
        with pytest.raises(FetchRefused) as refused:
            fetcher.get(web.url("127.0.0.1", "/go-internal"), robots=False, trusted_origin=origin)
        assert refused.value.code == "ssrf_refused" and "127.0.0.2" in refused.value.reason
        with pytest.raises(FetchRefused, match="ssrf_refused"):  # and without the trust, the origin is refused too
            fetcher.get(web.url("127.0.0.1", "/search?q=coffee&format=json"), robots=False)
    assert web.paths("internal.test") == []

    # an engine on a host that does not resolve (no network): a warning, no results, nothing raised
    down = search_settings(
        graph,
        web,
        searxng_url="http://searx.invalid:8888",
        web_search_engines=["searxng", "browser"],
        serp_url="https://html.duckduckgo.com/html/",
    )
    with WebFetcher.from_settings(down, gate=graph.domains, resolver=resolver) as fetcher:
        engines, _ = build_engines(
            down.search,
            down.web.chromium_path,
            fetcher,
            renderer=lambda: ChromiumRenderer(Path("/nonexistent/chromium")),
        )
        run = WebSearchRun(query=QUERY)
        assert web_search(graph, down, fetcher, engines).search(QUERY, run) == []
    assert [(e["engine"], e["state"], e["code"]) for e in run.engines] == [
        ("searxng", "failed", "unreachable"),
        ("browser", "failed", "unreachable"),
    ]
    assert "no network in tests: searx.invalid" in run.engines[0]["error"]
    assert run.warnings[-1].startswith("no web search engine gave results")


# ----------------------------------------------------------------------------- the browser engine in chromium
@pytest.mark.browser
def test_the_browser_engine_reads_the_results_page_in_chromium_after_searxng_failed(graph: Services, web: Web) -> None:
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")
    graph.tasks.create_task("web_browser", CLAIM)
    settings = search_settings(
        graph,
        web,
        searxng_url=web.url("broken.test", ""),
        web_search_engines=["searxng", "browser"],
        chromium_path=chromium,
    )
    with WebFetcher.from_settings(settings, gate=graph.domains, resolver=resolver) as fetcher:
        engines, _ = build_engines(settings.search, settings.web.chromium_path, fetcher)
        search = web_search(graph, settings, fetcher, engines)
        executor = ResearchExecutor(
            graph.store, lambda: graph.ingest, settings.paths.allowed_roots, web=lambda: fetcher, search=lambda: search
        )
        try:
            status = run_query(graph, executor, "web_browser", QUERY)
        finally:
            for engine in engines:
                engine.close()
    result = job_result(status)
    assert result["web"]["engine"] == "browser"
    assert [e["state"] for e in result["web"]["engines"]] == ["failed", "answered"]
    assert not any("chromium did not render" in w for w in result["web"]["warnings"])  # chromium did render it
    assert any(w.startswith("web search engine searxng failed") for w in result["web"]["warnings"])
    # the page was fetched once through the fetcher and handed to chromium; chromium's own request for the
    # stylesheet came through the fetcher too (the server saw it with Lyra's User-Agent)
    assert web.paths("serp.test").count("/dist/h.css") == 1
    assert len([p for p in web.paths("serp.test") if p.startswith("/html/")]) == 1
    assert all(agent.startswith("Lyra/") for _, _, agent in web.hits)
    got = fates(result)
    assert got["news.test/coffee"] == ("read", "ok") and got["journal.test/trial"] == ("read", "ok")
    assert got["malware.example/free-sleep"][0] == "blocked" and web.paths("malware.example") == []
    assert {p["url"] for p in task_pages(graph, "web_browser")} == {
        web.url("news.test", "/coffee"),
        web.url("journal.test", "/trial"),
    }


# ----------------------------------------------------------------------------- no web: the academic path
def test_without_a_reachable_engine_a_query_job_still_finishes_through_the_academic_apis(
    graph: Services, web: Web, tmp_path: Path
) -> None:
    from lyra.testing.scholarly import Corpus, ReplayServer

    corpus = Path(__file__).resolve().parents[3] / "config" / "examples" / "scholarly" / "corpus.json"
    graph.tasks.create_task("web_none", "Time-restricted eating improves insulin sensitivity in adults")
    with ReplayServer(Corpus.load(corpus)) as replay:
        api = graph.settings.model_copy(
            update={**replay.settings_overrides(), "scholarly_cache_path": tmp_path / "scholarly.sqlite"}
        )
        # the defaults: no SearXNG, the browser engine at the real DuckDuckGo, which this machine cannot reach
        settings = graph.settings.model_copy(update={"web_search_engines": ["auto"]})
        with WebFetcher.from_settings(settings, gate=graph.domains, resolver=resolver) as fetcher:
            engines, notes = build_engines(settings.search, settings.web.chromium_path, fetcher)
            search = web_search(graph, settings, fetcher, engines, notes)
            executor = ResearchExecutor(
                graph.store,
                lambda: graph.ingest,
                settings.paths.allowed_roots,
                academic=lambda n: graph.academic(n, settings=api),
                web=lambda: fetcher,
                search=lambda: search,
            )
            try:
                status = run_query(
                    graph, executor, "web_none", "time-restricted eating insulin", expand_citations=False
                )
            finally:
                for engine in engines:
                    engine.close()
    result = job_result(status)
    assert result["web"]["engine"] is None and result["web"]["pages_read"] == 0
    assert any("LYRA_SEARXNG_URL" in n for n in notes)
    assert any("failed (unreachable)" in w and "html.duckduckgo.com" in w for w in result["web"]["warnings"])
    academic = result["academic"]
    assert academic["seeds"] and result["documents"] >= 1
    assert academic["searched"] is True and "always" in academic["reason"]


# ----------------------------------------------------------------------------- a natural question
def test_a_natural_question_is_searched_in_the_academic_apis_too_and_a_skip_says_why(
    graph: Services, web: Web, tmp_path: Path
) -> None:
    from lyra.services.academic import is_academic_query
    from lyra.testing.scholarly import Corpus, ReplayServer

    question = "Does drinking coffee in the afternoon reduce sleep duration in adults?"
    assert not is_academic_query(question)  # the old rule skipped the academic APIs once the web had read a page
    corpus = Path(__file__).resolve().parents[3] / "config" / "examples" / "scholarly" / "corpus.json"
    graph.tasks.create_task("web_natural", CLAIM)
    settings = search_settings(graph, web)
    with ReplayServer(Corpus.load(corpus)) as replay:
        api = settings.model_copy(
            update={**replay.settings_overrides(), "scholarly_cache_path": tmp_path / "scholarly.sqlite"}
        )
        with WebFetcher.from_settings(settings, gate=graph.domains, resolver=resolver) as fetcher:
            engines, _ = build_engines(settings.search, settings.web.chromium_path, fetcher)
            search = web_search(graph, settings, fetcher, engines)
            executor = ResearchExecutor(
                graph.store,
                lambda: graph.ingest,
                settings.paths.allowed_roots,
                academic=lambda n: graph.academic(n, settings=api),
                web=lambda: fetcher,
                search=lambda: search,
            )
            status = run_query(graph, executor, "web_natural", question, expand_citations=False)
            result = job_result(status)
            searched = {r.api for r in replay.requests() if r.path == "/paper/search" or "search" in r.query}
            assert result["web"]["pages_read"] == 2
            assert searched == {"semantic_scholar", "openalex"}
            assert result["academic"]["searched"] is True and "always" in result["academic"]["reason"]

            # the academic search turned off for one target: the job result and get_status say so, and why
            sent = len(replay.requests())
            status = run_query(
                graph, executor, "web_natural", "afternoon coffee", web_search=False, academic_search="off"
            )
            assert len(replay.requests()) == sent
    last = next((j for j in status.job_list or [] if j.value == "afternoon coffee"), None)
    assert last is not None and last.state == "done" and last.result is not None
    assert last.result["academic"]["searched"] is False and "off" in last.result["academic"]["reason"]
    assert last.result["web"]["searched"] is False and "options.web_search = false" in last.result["web"]["reason"]
    assert status.academic is not None
    assert any(w.startswith("academic search skipped: ") for w in status.academic.warnings)
