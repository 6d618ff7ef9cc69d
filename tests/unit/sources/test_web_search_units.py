"""Web search pieces without a network: the SearXNG JSON parser and engine, the DuckDuckGo-HTML-style results page
parser and the browser engine, engine selection from settings, URL normalisation and the merged job report.

The saved pages and answers in tests/data/search/ are written for Lyra in the services' real shapes (SearXNG's
``/search?format=json`` object; html.duckduckgo.com's result blocks, ads, "No results" notice and bot check).
The engines' HTTP side is a declared fake (:class:`FakeWeb`) here; tests/integration/web/test_web_search.py runs them
against a real local HTTP server and real chromium."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from pydantic import ValidationError

from lyra.core.errors import ConfigError
from lyra.core.settings import load_settings
from lyra.models.ingest import IngestReport, SkippedItem
from lyra.services.research import combined_report, report_summary
from lyra.services.web_search import normalise_url
from lyra.sources.search import (
    BrowserSerpEngine,
    SearchEngineError,
    SearxngEngine,
    build_engines,
    engine_names,
    parse_searxng,
    parse_serp,
    result_target,
)
from lyra.sources.web import FetchRefused, PageRenderer, RawResponse

DATA = Path(__file__).resolve().parents[2] / "data" / "search"
SERP_URL = "https://html.duckduckgo.com/html/?q=afternoon+coffee+sleep"


def data(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


class FakeWeb:
    """A declared fake of the fetcher's raw side: answers by URL path (and ``pageno``), records every call."""

    def __init__(self, answer: Callable[[str], RawResponse]) -> None:
        self.answer = answer
        self.calls: list[dict[str, object]] = []
        self.rendered: list[str] = []

    def get(
        self,
        url: str,
        *,
        robots: bool = True,
        count_page: bool = True,
        trusted_origin: str | None = None,
        max_bytes: int | None = None,
    ) -> RawResponse:
        self.calls.append({"url": url, "robots": robots, "trusted_origin": trusted_origin})
        return self.answer(url)

    def render(self, response: RawResponse, renderer: PageRenderer | None = None) -> str:
        assert renderer is not None
        self.rendered.append(response.url)
        return renderer.render(response, self.get, 5.0)


class FakeRenderer:
    """A declared fake browser: returns ``html`` for every page (what scripts would have built)."""

    def __init__(self, html: str | None = None, error: Exception | None = None) -> None:
        self.html = html
        self.error = error
        self.closed = False

    def render(self, page: RawResponse, fetch: Callable[[str], RawResponse], timeout: float) -> str:
        if self.error is not None:
            raise self.error
        return self.html if self.html is not None else page.body.decode()

    def close(self) -> None:
        self.closed = True


def json_response(url: str, payload: object, status: int = 200) -> RawResponse:
    return RawResponse(url, status, {"content-type": "application/json"}, json.dumps(payload).encode())


def html_response(url: str, html: str) -> RawResponse:
    return RawResponse(url, 200, {"content-type": "text/html; charset=utf-8"}, html.encode())


# ----------------------------------------------------------------------------- SearXNG JSON
def test_a_searxng_answer_gives_its_results_with_engines_scores_and_dates_and_drops_entries_without_a_web_url() -> None:
    answer = parse_searxng(data("searxng.json").encode())
    assert [r.url for r in answer.results] == [
        "https://sleep-journal.example/articles/coffee-afternoon",
        "https://doi.org/10.1000/caffeine.2019.12",
        "https://en.wikipedia.org/wiki/Caffeine",
    ]
    first = answer.results[0]
    assert first.title == "Afternoon coffee and sleep quality in adults"
    assert first.snippet.startswith("We studied 1,200 adults")
    assert (first.rank, first.engine, first.sources, first.score) == (
        1,
        "searxng",
        ("bing", "duckduckgo", "brave"),
        6.5,
    )
    assert first.published == "2021-03-15T00:00:00"
    assert answer.results[2].snippet == "" and answer.results[2].rank == 3  # content "" is kept as an empty snippet
    assert answer.number_of_results is None  # SearXNG's 0 means "unknown"
    assert answer.unresponsive == [("google", "timeout"), ("qwant", "HTTP error 403")]
    assert len(answer.dropped) == 2 and "magnet:" in answer.dropped[0]  # a torrent link and an entry without url


def test_an_empty_searxng_answer_has_no_results_and_lists_the_engines_that_did_not_answer() -> None:
    answer = parse_searxng(data("searxng_empty.json"))
    assert answer.results == [] and answer.dropped == []
    assert answer.unresponsive == [("google", "Suspended: CAPTCHA"), ("bing", "timeout")]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"<!doctype html><html><body>Too many requests</body></html>", "not JSON"),
        (b"[1, 2, 3]", "a list, not an object"),
        (b'{"query": "x", "answers": []}', "no 'results' list"),
    ],
)
def test_an_answer_that_is_not_searxng_json_is_an_error_naming_the_engine(body: bytes, words: str) -> None:
    with pytest.raises(SearchEngineError) as caught:
        parse_searxng(body)
    assert caught.value.engine == "searxng" and caught.value.code == "bad_answer"
    assert words in caught.value.reason


def searxng_pages(pages: dict[int, list[str]]) -> Callable[[str], RawResponse]:
    def answer(url: str) -> RawResponse:
        query = parse_qs(urlsplit(url).query)
        assert query["format"] == ["json"] and query["q"] == ["coffee sleep"]
        pageno = int(query["pageno"][0])
        results = [{"url": u, "title": f"title {u}", "content": "c", "engine": "bing"} for u in pages.get(pageno, [])]
        return json_response(url, {"query": "coffee sleep", "number_of_results": 0, "results": results,
                                   "unresponsive_engines": [["google", "timeout"]]})  # fmt: skip

    return answer


def test_the_searxng_engine_reads_further_pages_until_it_has_enough_and_numbers_them_without_duplicates() -> None:
    pages = {
        1: ["https://a.example/1", "https://b.example/2", "https://c.example/3"],
        2: ["https://c.example/3", "https://d.example/4", "https://e.example/5"],
        3: ["https://f.example/6"],
    }
    web = FakeWeb(searxng_pages(pages))
    engine = SearxngEngine("http://127.0.0.1:8888", web, max_pages=3)
    warnings: list[str] = []
    results = engine.search("coffee sleep", 5, warnings)
    assert [r.url for r in results] == [f"https://{h}.example/{i}" for i, h in enumerate("abcde", start=1)]
    assert [r.rank for r in results] == [1, 2, 3, 4, 5]
    assert len(web.calls) == 2  # five results after page 2: page 3 is not asked
    assert all(c["trusted_origin"] == "http://127.0.0.1:8888" and c["robots"] is False for c in web.calls)
    assert warnings == ["searxng: its engine google did not answer (timeout)"]  # once, not once per page


def test_the_searxng_engine_stops_at_an_empty_page_and_at_max_pages() -> None:
    web = FakeWeb(searxng_pages({1: ["https://a.example/1"]}))
    assert [r.url for r in SearxngEngine("http://sx.example", web).search("coffee sleep", 20)] == [
        "https://a.example/1"
    ]
    assert len(web.calls) == 2
    web = FakeWeb(searxng_pages({n: [f"https://a.example/{n}"] for n in range(1, 9)}))
    assert len(SearxngEngine("http://sx.example", web, max_pages=3).search("coffee sleep", 20)) == 3
    assert len(web.calls) == 3


@pytest.mark.parametrize(
    ("refusal", "code", "words"),
    [
        (FetchRefused("http_error", "HTTP 403 from x", 403), "refused", "search.formats"),
        (FetchRefused("http_error", "HTTP 429 from x", 429), "refused", "limiter"),
        (FetchRefused("network_error", "ConnectError: connection refused"), "unreachable", "connection refused"),
        (FetchRefused("blocked_domain", "domain sx.example is blocked (manual)"), "refused", "blocked"),
    ],
)
def test_a_searxng_instance_that_refuses_or_is_down_is_an_error_with_a_reason(
    refusal: FetchRefused, code: str, words: str
) -> None:
    def answer(url: str) -> RawResponse:
        raise refusal

    with pytest.raises(SearchEngineError) as caught:
        SearxngEngine("http://sx.example", FakeWeb(answer)).search("coffee sleep", 10)
    assert (caught.value.engine, caught.value.code) == ("searxng", code)
    assert words in caught.value.reason


def test_an_html_page_where_searxng_json_was_expected_is_a_bad_answer() -> None:
    web = FakeWeb(lambda url: html_response(url, "<html><body>login</body></html>"))
    with pytest.raises(SearchEngineError, match="not JSON") as caught:
        SearxngEngine("http://sx.example", web).search("coffee sleep", 10)
    assert caught.value.code == "bad_answer"


def test_a_later_searxng_page_failing_keeps_the_first_pages_results_with_a_warning() -> None:
    first = searxng_pages({1: ["https://a.example/1"]})

    def answer(url: str) -> RawResponse:
        if "pageno=2" in url:
            raise FetchRefused("timeout", "timed out")
        return first(url)

    warnings: list[str] = []
    results = SearxngEngine("http://sx.example", FakeWeb(answer)).search("coffee sleep", 10, warnings)
    assert [r.url for r in results] == ["https://a.example/1"]
    assert any("page 2 not read: timeout" in w for w in warnings)


# ----------------------------------------------------------------------------- DuckDuckGo-HTML-style page
def test_the_results_page_gives_organic_results_with_decoded_redirect_targets_and_skips_ads_and_repeats() -> None:
    page = parse_serp(data("ddg_html.html"), SERP_URL)
    assert [r.url for r in page.results] == [
        "https://sleep-journal.example/articles/coffee-afternoon?ref=ddg",
        "https://doi.org/10.1000/caffeine.2019.12",
        "https://en.wikipedia.org/wiki/Caffeine",
        "http://sleep-foundation.example/pdf/caffeine-guide.pdf",
    ]
    first = page.results[0]
    assert first.title == "Afternoon coffee and sleep quality in adults"  # <b> joined, whitespace collapsed
    assert first.snippet.endswith("by 41 minutes & lowered sleep efficiency.")  # entities decoded
    assert [r.rank for r in page.results] == [1, 2, 3, 4] and {r.engine for r in page.results} == {"browser"}
    assert page.ads_skipped == 2  # the y.js advert and the advert wrapped in the redirect
    assert not page.no_results and page.blocked is None


def test_a_no_results_page_is_empty_and_not_a_bot_check() -> None:
    page = parse_serp(data("ddg_html_no_results.html"), SERP_URL)
    assert page.results == [] and page.no_results and page.blocked is None


def test_a_bot_check_page_is_recognised() -> None:
    page = parse_serp(data("ddg_html_bot_check.html"), SERP_URL)
    assert page.results == [] and not page.no_results
    assert page.blocked == "anomaly-modal"


@pytest.mark.parametrize(
    ("href", "target"),
    [
        ("//duckduckgo.com/l/?uddg=https%3A%2F%2Fa.example%2Fp%3Fx%3D1%26y%3D2&rut=abc", "https://a.example/p?x=1&y=2"),
        ("https://duckduckgo.com/y.js?ad_domain=shop.example&ad_provider=bing", None),
        ("//duckduckgo.com/l/?uddg=https%3A%2F%2Fduckduckgo.com%2Fy.js%3Fad_domain%3Dx&rut=1", None),
        ("/l/?uddg=http%3A%2F%2Fnews.example%2Fa", "http://news.example/a"),  # the redirect on the page's own site
        ("https://direct.example/page", "https://direct.example/page"),
        ("/html/?q=next+page", None),  # the engine's own pages
        ("//duckduckgo.com/feedback.html", None),
        ("javascript:void(0)", None),
        ("//duckduckgo.com/l/?rut=abc", None),  # a redirect without a target
    ],
)
def test_result_links_are_decoded_and_ads_and_the_engines_own_links_dropped(href: str, target: str | None) -> None:
    assert result_target(href, SERP_URL) == target


def test_the_browser_engine_parses_what_chromium_rendered() -> None:
    shell = "<html><body><div id='links'></div><script src='/r.js'></script></body></html>"
    web = FakeWeb(lambda url: html_response(url, shell))
    renderer = FakeRenderer(html=data("ddg_html.html"))
    engine = BrowserSerpEngine("https://html.duckduckgo.com/html/", web, lambda: renderer)
    results = engine.search("afternoon coffee sleep", 3)
    assert [r.rank for r in results] == [1, 2, 3]
    assert web.calls[0]["url"] == "https://html.duckduckgo.com/html/?q=afternoon+coffee+sleep"
    assert web.calls[0]["trusted_origin"] == "https://html.duckduckgo.com:443"
    assert web.rendered == ["https://html.duckduckgo.com/html/?q=afternoon+coffee+sleep"]
    engine.close()
    assert renderer.closed


def test_the_browser_engine_without_chromium_parses_the_page_as_fetched_with_a_warning() -> None:
    web = FakeWeb(lambda url: html_response(url, data("ddg_html.html")))

    def no_chromium() -> PageRenderer:
        raise ConfigError("chromium not found at /nowhere/chromium")

    warnings: list[str] = []
    results = BrowserSerpEngine("https://html.duckduckgo.com/html/", web, no_chromium).search("q", 10, warnings)
    assert len(results) == 4
    assert warnings and "chromium did not render" in warnings[0] and "/nowhere/chromium" in warnings[0]


@pytest.mark.parametrize(
    ("page", "code", "words"),
    [
        ("ddg_html_bot_check.html", "blocked", "bot check"),
        (None, "bad_answer", "no result blocks"),
    ],
)
def test_a_bot_check_or_an_unknown_page_is_an_error_never_an_empty_answer(
    page: str | None, code: str, words: str
) -> None:
    html = data(page) if page else "<html><body><h1>Welcome</h1><p>Nothing like a results page.</p></body></html>"
    web = FakeWeb(lambda url: html_response(url, html))
    engine = BrowserSerpEngine("https://html.duckduckgo.com/html/", web, lambda: FakeRenderer())
    with pytest.raises(SearchEngineError) as caught:
        engine.search("afternoon coffee sleep", 10)
    assert (caught.value.engine, caught.value.code) == ("browser", code)
    assert words in caught.value.reason


def test_the_no_results_page_is_an_empty_answer() -> None:
    web = FakeWeb(lambda url: html_response(url, data("ddg_html_no_results.html")))
    engine = BrowserSerpEngine("https://html.duckduckgo.com/html/", web, lambda: FakeRenderer())
    assert engine.search("qzxv wprt lmnk", 10) == []


def test_a_results_page_that_is_not_html_is_a_bad_answer() -> None:
    web = FakeWeb(lambda url: json_response(url, {"results": []}))
    with pytest.raises(SearchEngineError, match="not an HTML results page"):
        BrowserSerpEngine("https://html.duckduckgo.com/html/", web, lambda: FakeRenderer()).search("q", 10)


# ----------------------------------------------------------------------------- settings and engine choice
def test_auto_uses_searxng_when_configured_then_the_browser_when_chromium_is_installed() -> None:
    with_sx = load_settings(searxng_url="http://127.0.0.1:8888/")
    chromium_path = with_sx.web.chromium_path
    assert engine_names(with_sx.search, chromium_path, chromium=lambda _p: True) == (["searxng", "browser"], [])
    names, notes = engine_names(load_settings().search, chromium_path, chromium=lambda _p: False)
    assert names == [] and any("LYRA_SEARXNG_URL" in n for n in notes) and any("chromium" in n for n in notes)
    off = load_settings(web_search_engines="off").search
    assert engine_names(off, chromium_path, chromium=lambda _p: True)[0] == []
    both = load_settings(web_search_engines="browser,searxng").search
    names, notes = engine_names(both, chromium_path, chromium=lambda _p: False)
    assert names == ["browser"] and "LYRA_SEARXNG_URL is not set" in notes[0]
    web = FakeWeb(lambda url: html_response(url, ""))
    engines, _ = build_engines(with_sx.search, chromium_path, web, chromium=lambda _p: True)
    assert [e.name for e in engines] == ["searxng", "browser"]


def test_search_settings_are_checked_with_the_field_named() -> None:
    assert load_settings(searxng_url="http://10.0.0.5:8080/search").search.searxng_url == "http://10.0.0.5:8080"
    assert load_settings(web_search_engines='["searxng"]').search.web_search_engines == ["searxng"]
    with pytest.raises(ValidationError, match="LYRA_SEARXNG_URL"):
        load_settings(searxng_url="searx.local?q=")
    with pytest.raises(ValidationError, match="stand alone"):
        load_settings(web_search_engines="auto,browser")
    with pytest.raises(ValidationError, match="web_search_engines"):
        load_settings(web_search_engines="google")
    with pytest.raises(ValidationError, match="LYRA_SERP_URL"):
        load_settings(serp_url="file:///etc/passwd")


# ----------------------------------------------------------------------------- candidates and the job result
@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://www.Example.org/a/", "https://example.org/a"),
        ("http://example.org:80/a#section", "http://example.org/a"),
        ("https://example.org/a?utm_source=x&id=3&fbclid=y", "https://example.org/a?id=3"),
        ("https://example.org", "https://example.org/"),
    ],
)
def test_urls_naming_the_same_page_normalise_alike(a: str, b: str) -> None:
    assert normalise_url(a) == normalise_url(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://example.org/a?id=3", "https://example.org/a?id=4"),
        ("http://example.org/a", "https://example.org/a"),
        ("https://example.org:8443/a", "https://example.org/a"),
        ("https://example.org/A", "https://example.org/a"),
    ],
)
def test_different_pages_stay_apart(a: str, b: str) -> None:
    assert normalise_url(a) != normalise_url(b)


def test_a_query_jobs_web_and_academic_reports_are_summed_into_one_result() -> None:
    web = IngestReport(task_id="t", cause_id="c1", claims=[], documents=3, pages_new=3, fragments_new=7,
                       edges={"SUPPORTS": 2, "NEUTRAL": 1}, skipped=[SkippedItem(item="u", reason="r")],
                       seconds_total=1.25)  # fmt: skip
    academic = IngestReport(task_id="t", cause_id="c2", claims=[], documents=2, pages_new=1, pages_existing=1,
                            fragments_new=4, edges={"SUPPORTS": 1, "REFUTES": 1}, seconds_total=0.5)  # fmt: skip
    merged = report_summary(combined_report([web, academic]))
    assert (merged["documents"], merged["pages_new"], merged["pages_existing"], merged["fragments_new"]) == (
        5,
        4,
        1,
        11,
    )
    assert merged["edges"] == {"SUPPORTS": 3, "NEUTRAL": 1, "REFUTES": 1}
    assert merged["skipped_total"] == 1 and merged["seconds_total"] == 1.75
    assert web.documents == 3 and web.edges == {"SUPPORTS": 2, "NEUTRAL": 1}  # the inputs are not changed


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://127.0.0.1:8888/search?q=x", "http://127.0.0.1:8888"),
        ("https://HTML.DuckDuckGo.com/html/", "https://html.duckduckgo.com:443"),
        ("http://searx.intranet", "http://searx.intranet:80"),
        ("http://[::1]:8080/", "http://[::1]:8080"),
        ("ftp://example.org/", ""),
        ("http://example.org:99999/", ""),
    ],
)
def test_the_trusted_origin_is_scheme_host_and_port_with_the_default_port_written(url: str, origin: str) -> None:
    from lyra.sources.web import origin_of

    assert origin_of(url) == origin
