"""The browser SERP engine: a DuckDuckGo-HTML-style results page opened in chromium (Playwright), then parsed.

The page (``https://html.duckduckgo.com/html/?q=...``, ``LYRA_SERP_URL``) is fetched through the web fetcher (SSRF
guard with the endpoint's origin trusted, domain gate, rate, daily budget) and rendered by chromium with every
request it makes served by the fetcher (:class:`lyra.sources.web.browser.ChromiumRenderer`): the browser never
reaches the network by itself. When chromium cannot render, the page is parsed as fetched (the HTML endpoint needs
no script) and a warning says so.

The page's shape, as :func:`parse_serp` reads it::

    <div class="result results_links results_links_deep web-result">
      <h2 class="result__title">
        <a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Fa&rut=...">
        Title with <b>bold</b> words</a></h2>
      <a class="result__url" href="//duckduckgo.com/l/?uddg=...">example.org/a</a>
      <a class="result__snippet" href="//duckduckgo.com/l/?uddg=...">The snippet</a>
    </div>
    <div class="result results_links results_links_deep result--ad"> ... href="https://duckduckgo.com/y.js?ad_domain=..."
    <div class="result results_links results_links_deep result--no-result"><div class="no-results">No results.</div>

Result links go through DuckDuckGo's redirect ``/l/?uddg=<url-encoded target>``: the target is decoded here and never
requested through the redirect. Ads (``result--ad``, ``/y.js`` links, a ``uddg`` target that is itself a ``/y.js``
link) are skipped. A page with neither results nor the "no results" notice is a bot check (``anomaly-modal``,
``challenge-form``, a CAPTCHA) or an unknown shape: an error, never an empty answer.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

from lyra.sources.search.base import RawGetter, RendererFactory, SearchEngineError, SearchResult, http_url
from lyra.sources.web.fetcher import FetchRefused, origin_of
from lyra.sources.web.types import PageRenderer, RawResponse

log = logging.getLogger(__name__)

__all__ = ["BrowserSerpEngine", "SerpPage", "parse_serp", "result_target"]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml", ""})
BOT_CHECK_MARKERS = (
    "anomaly-modal",
    "challenge-form",
    "bots use duckduckgo too",
    "g-recaptcha",
    "h-captcha",
    "captcha",
    "unusual traffic",
)
MAX_SERP_BYTES = 3_000_000


@dataclass
class SerpPage:
    """A parsed results page: results (rank from 1, ads and duplicates skipped), whether it said "no results", the
    bot-check marker found when it holds no result, and how many ads were skipped."""

    results: list[SearchResult] = field(default_factory=list)
    no_results: bool = False
    blocked: str | None = None
    ads_skipped: int = 0


def result_target(href: str, page_url: str, _depth: int = 0) -> str | None:
    """The target of a result link: DuckDuckGo's ``/l/?uddg=`` redirect decoded, a direct http(s) link as is; None
    for an ad (``/y.js``, also when wrapped in the redirect), a link back to the results page's own site, or
    anything that is not http(s)."""
    absolute = urljoin(page_url, href.strip())
    try:
        parts = urlsplit(absolute)
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    engine_host = host == "duckduckgo.com" or host.endswith(".duckduckgo.com")
    own_site = origin_of(absolute) == origin_of(page_url)
    if engine_host and parts.path.startswith("/y.js"):
        return None
    if (engine_host or own_site) and parts.path.rstrip("/") == "/l":
        target = parse_qs(parts.query).get("uddg", [""])[0].strip()
        return result_target(target, page_url, _depth + 1) if target and _depth < 2 else None
    if engine_host or own_site:  # the engine's own pages (next page, settings, feedback)
        return None
    return absolute if http_url(absolute) else None


class _SerpParser(HTMLParser):
    """Reads ``div.result`` blocks: ``a.result__a`` (link and title) and ``.result__snippet`` (snippet)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.div_depth = 0
        self.result_depth: int | None = None  # div depth of the open result block
        self.current: dict[str, object] | None = None
        self.blocks: list[dict[str, object]] = []
        self.capture: tuple[str, str, int] | None = None  # (key, tag, nesting of that tag)
        self.no_results = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k.lower(): (v or "") for k, v in attrs}
        classes = set(values.get("class", "").split())
        if "no-results" in classes or "result--no-result" in classes:
            self.no_results = True
        if self.capture is not None:
            key, ctag, depth = self.capture
            if tag == ctag:
                self.capture = (key, ctag, depth + 1)
        if tag == "div":
            self.div_depth += 1
            if self.result_depth is None and "result" in classes and "result--no-result" not in classes:
                self.result_depth = self.div_depth
                self.current = {"ad": "result--ad" in classes, "href": None, "title": [], "snippet": []}
                self.blocks.append(self.current)
        if self.current is None or self.capture is not None:
            return
        if tag == "a" and "result__a" in classes and self.current["href"] is None:
            self.current["href"] = values.get("href", "")
            self.capture = ("title", "a", 1)
        elif "result__snippet" in classes:
            self.capture = ("snippet", tag, 1)

    def handle_endtag(self, tag: str) -> None:
        if self.capture is not None:
            key, ctag, depth = self.capture
            if tag == ctag:
                self.capture = None if depth <= 1 else (key, ctag, depth - 1)
        if tag == "div":
            if self.result_depth is not None and self.div_depth == self.result_depth:
                self.result_depth = None
                self.current = None
                self.capture = None
            self.div_depth = max(self.div_depth - 1, 0)

    def handle_data(self, data: str) -> None:
        if self.capture is not None and self.current is not None:
            parts = self.current[self.capture[0]]
            assert isinstance(parts, list)
            parts.append(data)


def parse_serp(html: str, page_url: str, *, engine: str = "browser") -> SerpPage:
    """Parse a DuckDuckGo-HTML-style results page fetched from ``page_url`` (see the module docstring)."""
    parser = _SerpParser()
    parser.feed(html)
    parser.close()
    page = SerpPage(no_results=parser.no_results)
    seen: set[str] = set()
    for block in parser.blocks:
        href = block["href"]
        if not isinstance(href, str) or not href:
            continue
        target = result_target(href, page_url)
        if block["ad"] or target is None:
            page.ads_skipped += 1 if block["ad"] or "y.js" in href else 0
            continue
        if target in seen:
            continue
        seen.add(target)
        title_parts, snippet_parts = block["title"], block["snippet"]
        assert isinstance(title_parts, list) and isinstance(snippet_parts, list)
        page.results.append(
            SearchResult(
                url=target,
                title=" ".join("".join(title_parts).split()),
                snippet=" ".join("".join(snippet_parts).split()),
                rank=len(page.results) + 1,
                engine=engine,
            )
        )
    if not page.results and not page.no_results:
        lowered = html.lower()
        page.blocked = next((m for m in BOT_CHECK_MARKERS if m in lowered), None)
    return page


class BrowserSerpEngine:
    """Results pages opened in chromium (see the module docstring). ``renderer``: builds the browser backend on first
    use (Debian's chromium, :class:`~lyra.sources.web.browser.ChromiumRenderer`); it is closed with the engine."""

    name = "browser"

    def __init__(self, serp_url: str, client: RawGetter, renderer: RendererFactory, *, robots: bool = False) -> None:
        self.serp_url = serp_url
        self.origin = origin_of(serp_url)
        if not self.origin:
            raise ValueError(f"not an http(s) URL: {serp_url!r}")
        self.client = client
        self._make_renderer = renderer
        self._renderer: PageRenderer | None = None
        self._lock = threading.Lock()
        self.robots = robots

    def page_url(self, query: str) -> str:
        return f"{self.serp_url}{'&' if '?' in self.serp_url else '?'}{urlencode({'q': query})}"

    def _rendered(self, response: RawResponse, notes: list[str]) -> str:
        try:
            with self._lock:
                if self._renderer is None:
                    self._renderer = self._make_renderer()
                renderer = self._renderer
            return self.client.render(response, renderer)
        except Exception as exc:  # chromium missing or failing: the HTML endpoint works without scripts
            log.warning("the browser engine could not render %s: %s", response.url, exc)
            notes.append(f"browser: chromium did not render the results page ({exc}); parsed it as fetched")
            return response.body.decode(response.charset or "utf-8", errors="replace")

    def search(self, query: str, limit: int, warnings: list[str] | None = None) -> list[SearchResult]:
        notes = warnings if warnings is not None else []
        url = self.page_url(query)
        try:
            response = self.client.get(url, robots=self.robots, trusted_origin=self.origin, max_bytes=MAX_SERP_BYTES)
        except FetchRefused as refused:
            code = "unreachable" if refused.code in ("network_error", "timeout", "ssrf_refused") else "refused"
            raise SearchEngineError(self.name, code, f"{refused.code}: {refused.reason}") from None
        if response.content_type not in HTML_TYPES:
            raise SearchEngineError(
                self.name, "bad_answer", f"{response.url} answered {response.content_type}, not an HTML results page"
            )
        html = self._rendered(response, notes)
        page = parse_serp(html, response.url, engine=self.name)
        if page.blocked is not None:
            raise SearchEngineError(
                self.name,
                "blocked",
                f"{self.origin} answered a bot check instead of results (found {page.blocked!r}); "
                "Lyra does not solve CAPTCHAs: configure a SearXNG instance (LYRA_SEARXNG_URL) or try later",
            )
        if not page.results and not page.no_results:
            raise SearchEngineError(
                self.name,
                "bad_answer",
                f"{response.url} has no result blocks (div.result with a.result__a) and no 'no results' notice: "
                "not a DuckDuckGo-HTML-style page (LYRA_SERP_URL)?",
            )
        return page.results[:limit]

    def close(self) -> None:
        with self._lock:
            renderer, self._renderer = self._renderer, None
        if renderer is not None:
            renderer.close()
