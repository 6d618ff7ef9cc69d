"""Both scholarly APIs together: one answer merged through a :class:`PaperIndex`, Semantic Scholar preferred.

When one API is down, rate-limited or out of budget, the other's results come back with a warning in
:class:`SourcesResult`; when every configured API fails, the error is raised (``SourceUnavailable`` naming them,
or ``BudgetExhausted`` when the task's request budget is what stopped them). A search and a paper's neighbours ask
both APIs at the same time (each keeps its own rate limit); a lookup asks Semantic Scholar first and OpenAlex only
for what is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Generic, Literal, TypeVar

import httpx

from lyra.core.errors import BudgetExhausted, SourceUnavailable
from lyra.core.settings import ScholarlySettings
from lyra.sources.scholarly.http import (
    ApiHttp,
    RequestBudget,
    ResponseCache,
    RetryPolicy,
    Usage,
    shared_limiter,
    user_agent,
)
from lyra.sources.scholarly.openalex import OpenAlex, warn_keyless_once
from lyra.sources.scholarly.papers import API_ORDER, ApiName, Citation, Paper, PaperId, PaperIndex, merge_papers
from lyra.sources.scholarly.semantic_scholar import SemanticScholar

T = TypeVar("T")
U = TypeVar("U")
Direction = Literal["references", "citations", "both"]


@dataclass
class SourcesResult(Generic[T]):
    value: T
    warnings: list[str] = field(default_factory=list)


class _Failures:
    """What went wrong with each API during one call, turned into warnings or one error."""

    def __init__(self) -> None:
        self.errors: dict[str, Exception] = {}
        self.served: set[str] = set()

    def run(self, api: ApiName, call: Callable[[], U]) -> U | None:
        try:
            value = call()
        except (SourceUnavailable, BudgetExhausted) as exc:
            self.errors.setdefault(api, exc)
            return None
        self.served.add(api)
        return value

    def warnings(self, used: list[ApiName]) -> list[str]:
        complete = [api for api in used if api in self.served and api not in self.errors]
        tail = f"; results from {', '.join(complete)} only" if complete else "; partial results" if self.served else ""
        return [f"{_reason(api, self.errors[api])}{tail}" for api in API_ORDER if api in self.errors]

    def raise_if_all_failed(self, used: list[ApiName]) -> None:
        """Raise when APIs were asked and none answered anything: the budget error when that is what stopped
        them all, else ``SourceUnavailable`` naming each API's failure."""
        if not used or self.served or not self.errors:
            return
        if all(isinstance(exc, BudgetExhausted) for exc in self.errors.values()):
            raise next(iter(self.errors.values()))
        detail = "; ".join(_reason(api, self.errors[api]) for api in API_ORDER if api in self.errors)
        raise SourceUnavailable(f"no scholarly API answered ({detail})")


def _together(calls: Sequence[Callable[[], U]]) -> list[U]:
    """Run the calls at the same time (one thread each; the APIs' own limiters pace them), results in order."""
    if len(calls) < 2:
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="lyra-scholarly") as pool:
        return [future.result() for future in [pool.submit(call) for call in calls]]


def _reason(api: str, exc: Exception) -> str:
    text = str(exc)
    return text if text.startswith(f"{api} ") else f"{api} unavailable: {text}"


class ScholarlySources:
    """Semantic Scholar and OpenAlex as one source. Either may be None (not configured)."""

    def __init__(self, s2: SemanticScholar | None, openalex: OpenAlex | None) -> None:
        self.s2 = s2
        self.openalex = openalex
        self._closers: list[Callable[[], None]] = []

    def _apis(self) -> list[ApiName]:
        return [api.name for api in (self.s2, self.openalex) if api is not None]

    def search(self, query: str, limit: int) -> SourcesResult[list[Paper]]:
        """Both APIs' top ``limit`` hits, merged; ranked by each paper's best rank in either list (S2 first on
        ties), at most ``limit``."""
        failures = _Failures()
        apis = [api for api in (self.s2, self.openalex) if api is not None]
        answers = _together([partial(failures.run, api.name, partial(api.search, query, limit)) for api in apis])
        lists: list[list[Paper]] = [answer or [] for answer in answers]
        failures.raise_if_all_failed(self._apis())
        index = PaperIndex()
        best: dict[int, tuple[int, int]] = {}
        entries: list[Paper] = []
        for which, papers in enumerate(lists):
            for rank, paper in enumerate(papers):
                index.add(paper)
                entries.append(paper)
                best.setdefault(id(paper), (rank, which))
        ranked: dict[str, tuple[tuple[int, int], Paper]] = {}
        for paper in entries:
            canonical = index.get(paper)
            assert canonical is not None
            key = canonical.key()
            position = best[id(paper)]
            if key not in ranked or position < ranked[key][0]:
                ranked[key] = (position, canonical)
        merged = [paper for _, paper in sorted(ranked.values(), key=lambda item: item[0])]
        return SourcesResult(merged[:limit], failures.warnings(self._apis()))

    def resolve(self, pid: PaperId) -> SourcesResult[Paper | None]:
        """The paper ``pid`` names: Semantic Scholar first, then OpenAlex's record (a free singleton lookup) merged
        in to fill the gaps — asked when S2 fails, does not know the paper, or lacks its abstract or OpenAlex id
        (S2 never gives one; having it saves a lookup in every later OpenAlex call). An OpenAlex id asks OpenAlex
        only."""
        failures = _Failures()
        used: list[ApiName] = []
        found: Paper | None = None
        s2 = self.s2
        if s2 is not None and pid.kind != "openalex":
            used.append("semantic_scholar")
            found = failures.run("semantic_scholar", partial(s2.paper, pid))
        oa = self.openalex
        if oa is not None and (found is None or not found.abstract or not found.openalex_id):
            lookup = _openalex_lookup_id(pid, found)
            if lookup is not None:
                used.append("openalex")
                other = failures.run("openalex", partial(oa.paper, lookup))
                if other is not None:
                    found = other if found is None else merge_papers(found, other)
        failures.raise_if_all_failed(used)
        return SourcesResult(found, failures.warnings(used))

    def neighbours(self, paper: Paper, direction: Direction, limit: int) -> SourcesResult[list[Citation]]:
        """Citation edges around ``paper`` from both APIs (each up to ``limit`` per direction; OpenAlex gives at
        most 20 references), merged: one edge per pair of canonical papers, ``source`` S2 when S2 reported it."""
        failures = _Failures()
        directions = ("references", "citations") if direction == "both" else (direction,)

        def gather(api: SemanticScholar | OpenAlex) -> list[tuple[Paper, Paper, ApiName]]:
            found: list[tuple[Paper, Paper, ApiName]] = []
            for which in directions:
                fetch = api.references if which == "references" else api.citations
                papers = failures.run(api.name, partial(fetch, paper, limit))
                if papers is None:
                    break
                for other in papers:
                    found.append((paper, other, api.name) if which == "references" else (other, paper, api.name))
            return found

        apis = [api for api in (self.s2, self.openalex) if api is not None]
        used: list[ApiName] = [api.name for api in apis]
        raw = [edge for found in _together([partial(gather, api) for api in apis]) for edge in found]
        failures.raise_if_all_failed(used)
        index = PaperIndex()
        index.add(paper)
        for citing, cited, _ in raw:
            index.add(citing)
            index.add(cited)
        edges: dict[tuple[str, str], Citation] = {}
        for citing, cited, source in raw:
            a, b = index.get(citing), index.get(cited)
            assert a is not None and b is not None
            pair = (a.key(), b.key())
            if pair not in edges or (source == "semantic_scholar" and edges[pair].source != source):
                edges[pair] = Citation(citing=a, cited=b, source=source)
        return SourcesResult(list(edges.values()), failures.warnings(used))

    def usage(self) -> dict[str, dict[str, int]]:
        """Per configured API: requests sent, cache_hits, retries, rate_limited (429s), errors."""
        return {api.name: api.http.usage.snapshot() for api in (self.s2, self.openalex) if api is not None}

    def close(self) -> None:
        for close in self._closers:
            close()
        self._closers.clear()

    def __enter__(self) -> ScholarlySources:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _openalex_lookup_id(pid: PaperId, found: Paper | None) -> PaperId | None:
    if pid.openalex() is not None:
        return pid
    if found is not None:
        return next((i for i in found.identifiers() if i.openalex() is not None), None)
    return None


def http_client(settings: ScholarlySettings) -> httpx.Client:
    """The one HTTP client the scholarly APIs share: their timeout, redirects, and a User-Agent naming the contact."""
    return httpx.Client(
        timeout=httpx.Timeout(settings.scholarly_timeout_seconds),
        follow_redirects=True,
        headers={"User-Agent": user_agent(settings.contact_email)},
    )


def retry_policy(settings: ScholarlySettings) -> RetryPolicy:
    return RetryPolicy(
        attempts=settings.scholarly_max_attempts,
        initial_wait=settings.scholarly_retry_initial_wait,
        max_wait=settings.scholarly_retry_max_wait,
        timeout=settings.scholarly_retry_timeout,
    )


def polite_params(settings: ScholarlySettings) -> dict[str, str]:
    """``mailto``: the contact OpenAlex and Crossref ask polite clients to name (their polite pools)."""
    return {"mailto": settings.contact_email} if settings.contact_email else {}


def openalex_http(
    settings: ScholarlySettings,
    client: httpx.Client,
    retry: RetryPolicy,
    budget: RequestBudget,
    usage: Usage,
    cache: ResponseCache | None,
) -> ApiHttp:
    """OpenAlex's door over ``client``: its address, rate limit, polite ``mailto`` and API key."""
    secret = {"api_key": settings.openalex_api_key.get_secret_value()} if settings.openalex_api_key else {}
    return ApiHttp(
        "openalex",
        settings.openalex_url,
        client,
        limiter=shared_limiter("openalex", settings.openalex_url, settings.openalex_requests_per_second),
        retry=retry,
        usage=usage,
        budget=budget,
        cache=cache,
        params=polite_params(settings),
        secret_params=secret,
        key_hint="check the key in LYRA_OPENALEX_API_KEY and its daily allowance"
        if secret
        else "set LYRA_OPENALEX_API_KEY: the keyless allowance is tiny",
    )


def build_sources(
    settings: ScholarlySettings,
    cache_file: Path,
    *,
    max_requests: int | None = None,
    s2: bool = True,
    openalex: bool = True,
    page_size: int = 100,
    cache: bool = True,
    cache_reads: bool = True,
) -> ScholarlySources:
    """Both clients over one ``httpx.Client``, one response cache and one request budget (``max_requests`` sent
    requests across both APIs; cache hits are free). Rate limiters are shared process-wide per API. ``cache_file``:
    the response cache (``Settings.scholarly_cache_file``; ``cache`` false: none; ``cache_reads`` false: every answer
    read fresh and kept in the cache, as a refresh's re-check wants, so that the job re-reading a changed paper reads
    what the check saw). Close the result (or use it as a context manager) to release the client and the
    cache."""
    client = http_client(settings)
    responses = (
        ResponseCache(cache_file, settings.scholarly_cache_ttl_seconds, read=cache_reads)
        if cache and settings.scholarly_cache_ttl_seconds > 0
        else None
    )
    budget = RequestBudget(max_requests)
    retry = retry_policy(settings)
    s2_client: SemanticScholar | None = None
    if s2:
        headers = {"x-api-key": settings.s2_api_key.get_secret_value()} if settings.s2_api_key else {}
        s2_client = SemanticScholar(
            ApiHttp(
                "semantic_scholar",
                settings.s2_url,
                client,
                limiter=shared_limiter("semantic_scholar", settings.s2_url, settings.s2_requests_per_second),
                retry=retry,
                usage=Usage(),
                budget=budget,
                cache=responses,
                headers=headers,
                key_hint="check the key in LYRA_S2_API_KEY (a free key starts at 1 request/s)"
                if settings.s2_api_key
                else "without LYRA_S2_API_KEY Semantic Scholar shares a small keyless pool; a free key helps",
            ),
            page_size=page_size,
        )
    oa_client: OpenAlex | None = None
    if openalex:
        if not settings.openalex_api_key:
            warn_keyless_once()
        oa_client = OpenAlex(openalex_http(settings, client, retry, budget, Usage(), responses), page_size=page_size)
    sources = ScholarlySources(s2_client, oa_client)
    sources._closers.append(client.close)
    if responses is not None:
        sources._closers.append(responses.close)
    return sources
