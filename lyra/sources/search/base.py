"""The search-engine interface: a query in, ranked result links out; failures as :class:`SearchEngineError`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from lyra.sources.web.types import PageRenderer, RawResponse

__all__ = [
    "RawGetter",
    "SearchEngine",
    "SearchEngineError",
    "SearchResult",
    "http_url",
]


@dataclass(frozen=True)
class SearchResult:
    """One result link of a search engine.

    ``rank``: 1-based position in the engine's answer (after ads and duplicates were dropped). ``engine``: the Lyra
    engine that returned it (``searxng``, ``browser``); ``sources``: the engines behind it when the engine is a
    meta-search (SearXNG's ``engines``); ``score``: the engine's own score when it gives one.
    """

    url: str
    title: str
    snippet: str
    rank: int
    engine: str
    sources: tuple[str, ...] = ()
    score: float | None = None
    published: str | None = None


class SearchEngineError(Exception):
    """An engine that could not answer (down, refused by the fetcher, not JSON, a bot check, an unknown page shape).
    ``engine`` names it, ``code`` is short (``unreachable``, ``refused``, ``bad_answer``, ``blocked``), ``reason``
    says what happened in words a person can act on."""

    def __init__(self, engine: str, code: str, reason: str) -> None:
        super().__init__(f"{engine}: {reason}")
        self.engine = engine
        self.code = code
        self.reason = reason


class SearchEngine(Protocol):
    """A web search engine. ``search`` returns at most ``limit`` results, best first, or raises
    :class:`SearchEngineError`; non-fatal problems (a meta-search's sub-engine that did not answer, a page that could
    not be read after the first) are appended to ``warnings`` when a list is given."""

    name: str

    def search(self, query: str, limit: int, warnings: list[str] | None = None) -> list[SearchResult]: ...

    def close(self) -> None: ...


class RawGetter(Protocol):
    """What an engine needs of the web fetcher (:class:`lyra.sources.web.WebFetcher` fits): a guarded, polite GET
    that raises :class:`lyra.sources.web.FetchRefused`, and a page rendered in a browser."""

    def get(
        self,
        url: str,
        *,
        robots: bool = True,
        count_page: bool = True,
        trusted_origin: str | None = None,
        max_bytes: int | None = None,
    ) -> RawResponse: ...

    def render(self, response: RawResponse, renderer: PageRenderer | None = None) -> str: ...


RendererFactory = Callable[[], PageRenderer]


def http_url(url: str) -> bool:
    """Whether ``url`` is an absolute http(s) URL with a host (what a result link must be to become a candidate)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
