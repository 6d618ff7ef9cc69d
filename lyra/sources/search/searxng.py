"""SearXNG's JSON API: ``GET {base}/search?q=...&format=json&pageno=N``.

The answer (searx/webapp.py, ``output_format == 'json'``) is an object::

    {"query": "...", "number_of_results": 0,
     "results": [{"url": "...", "title": "...", "content": "...", "engine": "bing", "engines": ["bing", "brave"],
                  "score": 1.5, "category": "general", "publishedDate": null, "positions": [1, 2], ...}],
     "answers": [...], "corrections": [...], "infoboxes": [...], "suggestions": [...],
     "unresponsive_engines": [["google", "timeout"], ["qwant", "HTTP error 403"]]}

``number_of_results`` is often 0 (the sub-engines did not say). An instance answers HTTP 403 when its
``settings.yml`` does not list ``json`` under ``search.formats``, and 429 when its limiter refuses the client.
Each results page holds about ten results; more pages are asked until ``limit`` results are in, the page comes back
empty, or ``max_pages`` pages were asked.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode

from lyra.sources.search.base import RawGetter, SearchEngineError, SearchResult, http_url
from lyra.sources.web.fetcher import FetchRefused, origin_of

log = logging.getLogger(__name__)

__all__ = ["SearxngAnswer", "SearxngEngine", "parse_searxng"]

MAX_ANSWER_BYTES = 5_000_000
JSON_TYPES = frozenset({"application/json", "text/json", "application/javascript", "text/plain", ""})


@dataclass
class SearxngAnswer:
    """One parsed SearXNG JSON page: its results (``engine`` = ``searxng``, ranks from ``first_rank``), the total it
    claims, the sub-engines that did not answer (name, message), and how many entries were dropped and why."""

    results: list[SearchResult] = field(default_factory=list)
    number_of_results: int | None = None
    unresponsive: list[tuple[str, str]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def _text(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _unresponsive(value: object) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for entry in value if isinstance(value, list) else []:
        if isinstance(entry, list | tuple) and entry:
            name = str(entry[0])
            message = str(entry[1]) if len(entry) > 1 and entry[1] is not None else "no answer"
            out.append((name, message))
        elif isinstance(entry, str):
            out.append((entry, "no answer"))
    return out


def parse_searxng(body: bytes | str, *, first_rank: int = 1, engine: str = "searxng") -> SearxngAnswer:
    """Parse one SearXNG JSON answer; :class:`SearchEngineError` (``bad_answer``) when it is not JSON or not that
    shape. Entries without an http(s) ``url`` are dropped (listed in ``dropped``)."""
    try:
        data: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        start = (body[:80].decode("utf-8", "replace") if isinstance(body, bytes) else body[:80]).strip()
        reason = f"the answer is not JSON ({exc}); it starts with {start!r}"
        raise SearchEngineError(engine, "bad_answer", reason) from None
    if not isinstance(data, dict):
        raise SearchEngineError(engine, "bad_answer", f"the JSON answer is a {type(data).__name__}, not an object")
    results = data.get("results")
    if not isinstance(results, list):
        raise SearchEngineError(
            engine, "bad_answer", "the JSON answer has no 'results' list: is this SearXNG's /search?format=json?"
        )
    answer = SearxngAnswer(unresponsive=_unresponsive(data.get("unresponsive_engines")))
    total = data.get("number_of_results")
    answer.number_of_results = int(total) if isinstance(total, int | float) and total > 0 else None
    rank = first_rank
    for position, item in enumerate(results, start=1):
        if not isinstance(item, dict):
            answer.dropped.append(f"results[{position - 1}] is not an object")
            continue
        url = item.get("url")
        if not isinstance(url, str) or not http_url(url.strip()):
            answer.dropped.append(f"results[{position - 1}] has no http(s) url ({str(url)[:80]!r})")
            continue
        engines = item.get("engines")
        sources = tuple(str(e) for e in engines) if isinstance(engines, list) else ()
        if not sources and isinstance(item.get("engine"), str):
            sources = (item["engine"],)
        score = item.get("score")
        published = item.get("publishedDate")
        answer.results.append(
            SearchResult(
                url=url.strip(),
                title=_text(item.get("title")),
                snippet=_text(item.get("content")),
                rank=rank,
                engine=engine,
                sources=sources,
                score=float(score) if isinstance(score, int | float) else None,
                published=str(published) if published else None,
            )
        )
        rank += 1
    return answer


class SearxngEngine:
    """A SearXNG instance at ``base_url`` (``LYRA_SEARXNG_URL``), asked through the web fetcher (``client``): the
    domain gate and rate apply; its origin is trusted (it may be on this machine or the intranet); robots.txt only
    when ``robots`` (SearXNG's own robots.txt disallows ``/*?*q=*``)."""

    name = "searxng"

    def __init__(
        self,
        base_url: str,
        client: RawGetter,
        *,
        max_pages: int = 3,
        robots: bool = False,
        categories: str | None = "general",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.origin = origin_of(self.base_url)
        if not self.origin:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.client = client
        self.max_pages = max_pages
        self.robots = robots
        self.categories = categories

    def page_url(self, query: str, pageno: int) -> str:
        params: dict[str, str | int] = {"q": query, "format": "json", "pageno": pageno}
        if self.categories:
            params["categories"] = self.categories
        return f"{self.base_url}/search?{urlencode(params)}"

    def search(self, query: str, limit: int, warnings: list[str] | None = None) -> list[SearchResult]:
        notes = warnings if warnings is not None else []
        results: list[SearchResult] = []
        seen: set[str] = set()
        for pageno in range(1, self.max_pages + 1):
            try:
                response = self.client.get(
                    self.page_url(query, pageno),
                    robots=self.robots,
                    trusted_origin=self.origin,
                    max_bytes=MAX_ANSWER_BYTES,
                )
            except FetchRefused as refused:
                if pageno > 1:  # what the first pages gave is kept
                    notes.append(f"searxng: page {pageno} not read: {refused.code}: {refused.reason}")
                    break
                raise SearchEngineError(self.name, *_refusal(refused, self.base_url)) from None
            if response.content_type not in JSON_TYPES:
                raise SearchEngineError(
                    self.name,
                    "bad_answer",
                    f"{response.url} answered {response.content_type}, not JSON: is LYRA_SEARXNG_URL the instance's "
                    "base URL, and does its settings.yml list json under search.formats?",
                )
            answer = parse_searxng(response.body, first_rank=len(results) + 1, engine=self.name)
            for name, message in answer.unresponsive:
                note = f"searxng: its engine {name} did not answer ({message})"
                if note not in notes:
                    notes.append(note)
            if answer.dropped:
                notes.append(f"searxng: {len(answer.dropped)} entries without a usable URL dropped")
            fresh = [r for r in answer.results if r.url not in seen]
            for result in fresh:
                seen.add(result.url)
                results.append(replace(result, rank=len(results) + 1))
            if len(results) >= limit or not fresh:
                break
        return results[:limit]

    def close(self) -> None:
        pass


def _refusal(refused: FetchRefused, base_url: str) -> tuple[str, str]:
    """(code, reason) of an engine error for a fetcher refusal, with a hint for SearXNG's usual answers."""
    if refused.code == "http_error" and refused.status == 403:
        return "refused", (
            f"{base_url} answered HTTP 403: SearXNG does this when its settings.yml does not list json under "
            "search.formats"
        )
    if refused.code == "http_error" and refused.status == 429:
        return "refused", f"{base_url} answered HTTP 429: its limiter refuses this client (server.limiter)"
    if refused.code in ("network_error", "timeout", "ssrf_refused"):
        return "unreachable", f"{refused.code}: {refused.reason}"
    return "refused", f"{refused.code}: {refused.reason}"
