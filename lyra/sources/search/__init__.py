"""Web search for ``query`` targets: engines that turn a query into result links (candidate URLs).

Entry point::

    # from LYRA_WEB_SEARCH_ENGINES, LYRA_SEARXNG_URL, LYRA_SERP_URL
    engines = build_engines(settings.search, settings.web.chromium_path, fetcher)
    warnings: list[str] = []
    for engine in engines:                            # in order; the next one when an engine fails
        try:
            results = engine.search("coffee and sleep", limit=20, warnings=warnings)
        except SearchEngineError as exc:
            warnings.append(str(exc))                 # names the engine: "searxng: network_error: ..."

Engines (one module each, all behind :class:`SearchEngine`):

* :class:`SearxngEngine` (``searxng``): a SearXNG instance's JSON API (``/search?q=&format=json&pageno=``).
* :class:`BrowserSerpEngine` (``browser``): a DuckDuckGo-HTML-style results page opened in chromium via Playwright,
  parsed by :func:`parse_serp` (redirect links decoded, ads skipped, bot checks reported).

Every request an engine makes goes through the web fetcher (:meth:`lyra.sources.web.WebFetcher.get`): the SSRF
guard (the configured endpoint's own origin is trusted, since it may be on this machine or the intranet; nothing
else is), the domain gate, the domain's rate and daily budget, size and time limits. robots.txt of the search
endpoints is read only with ``LYRA_WEB_SEARCH_ROBOTS_TXT=true``. The result pages are fetched later, by the caller,
with every rule (robots.txt included).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from lyra.core.settings import SearchSettings
from lyra.sources.search.base import RawGetter, SearchEngine, SearchEngineError, SearchResult, http_url
from lyra.sources.search.browser_serp import BrowserSerpEngine, SerpPage, parse_serp, result_target
from lyra.sources.search.searxng import SearxngAnswer, SearxngEngine, parse_searxng
from lyra.sources.web.fetcher import PageRenderer

log = logging.getLogger(__name__)

__all__ = [
    "BrowserSerpEngine",
    "RawGetter",
    "SearchEngine",
    "SearchEngineError",
    "SearchResult",
    "SearxngAnswer",
    "SearxngEngine",
    "SerpPage",
    "build_engines",
    "engine_names",
    "http_url",
    "parse_searxng",
    "parse_serp",
    "result_target",
]


def engine_names(
    settings: SearchSettings, chromium_path: Path, *, chromium: Callable[[Path], bool] = Path.exists
) -> tuple[list[str], list[str]]:
    """The engines ``LYRA_WEB_SEARCH_ENGINES`` asks for, in order, and notes on what was left out and why.

    ``auto``: ``searxng`` when ``LYRA_SEARXNG_URL`` is set, then ``browser`` when chromium is installed at
    ``LYRA_CHROMIUM_PATH``. ``off``: none. An explicit ``searxng`` without ``LYRA_SEARXNG_URL`` is left out with a
    note; an explicit ``browser`` is kept without chromium (the results page is then parsed as fetched)."""
    wanted = settings.web_search_engines
    notes: list[str] = []
    if wanted == ["off"]:
        return [], ["web search is off (LYRA_WEB_SEARCH_ENGINES=off)"]
    if wanted == ["auto"]:
        names: list[str] = []
        if settings.searxng_url:
            names.append("searxng")
        else:
            notes.append("no SearXNG instance configured (LYRA_SEARXNG_URL)")
        if chromium(chromium_path):
            names.append("browser")
        else:
            notes.append(f"no chromium at {chromium_path} for the browser engine (LYRA_CHROMIUM_PATH)")
        return names, notes
    names = []
    for name in wanted:
        if name == "searxng" and not settings.searxng_url:
            notes.append("LYRA_WEB_SEARCH_ENGINES names searxng but LYRA_SEARXNG_URL is not set: left out")
            continue
        names.append(name)
    return names, notes


def build_engines(
    settings: SearchSettings,
    chromium_path: Path,
    client: RawGetter,
    *,
    renderer: Callable[[], PageRenderer] | None = None,
    chromium: Callable[[Path], bool] = Path.exists,
) -> tuple[list[SearchEngine], list[str]]:
    """The configured engines over ``client`` (the web fetcher), in order, and the notes of :func:`engine_names`.
    ``renderer``: the browser engine's backend factory (default: Debian's chromium at ``LYRA_CHROMIUM_PATH``)."""
    names, notes = engine_names(settings, chromium_path, chromium=chromium)

    def chromium_renderer() -> PageRenderer:
        from lyra.sources.web.browser import ChromiumRenderer

        return ChromiumRenderer(chromium_path)

    engines: list[SearchEngine] = []
    for name in names:
        if name == "searxng":
            assert settings.searxng_url is not None
            engines.append(
                SearxngEngine(
                    settings.searxng_url,
                    client,
                    max_pages=settings.searxng_max_pages,
                    robots=settings.web_search_robots_txt,
                )
            )
        elif name == "browser":
            engines.append(
                BrowserSerpEngine(
                    settings.serp_url,
                    client,
                    renderer or chromium_renderer,
                    robots=settings.web_search_robots_txt,
                )
            )
    return engines, notes
