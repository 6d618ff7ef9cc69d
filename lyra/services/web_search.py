"""Web search for ``query`` jobs (decision record 0012): search engines → candidate URLs → ranking → fetch → ingest.

1. **Search**: the configured engines (:mod:`lyra.sources.search`) are asked in order; the first that answers with
   results is used. An engine that fails (down, refused, not JSON, a bot check) or finds nothing leaves a warning
   naming it, and the next one is asked. No engine, or none answering, is a warning, never a failed job.
2. **Candidates**: the results are de-duplicated by normalised URL (scheme and host in lowercase, ``www.``, default
   port, fragment, trailing slash and tracking parameters such as ``utm_*`` dropped), every domain is asked of the
   domain gate (a blocked domain is dropped here, never fetched), and pages this task has read already are skipped.
3. **Ranking**: :class:`lyra.ml.ranking.CandidateRanker` (BM25 + embedding similarity, times the domain category
   weight; the reranker too when one is configured) scores each candidate's ``title. snippet`` against the query
   and against each of the task's claims; a candidate's score is its best one.
4. **Relevance floor** (decision record 0010): each candidate's ``title. snippet`` gets the absolute relevance of
   :mod:`lyra.ml.relevance` (``w_emb * cosine + w_terms * share of the claim's content words``) against each of the
   task's claims (the query when the task has none yet); its best one below ``LYRA_RELEVANCE_FLOOR`` makes it
   ``below_floor``: never fetched, listed with that relevance. The ranking orders a pool; the floor reads one result
   alone, so a cake recipe ranked last is not read just because the page count had room for it.
5. **Fetch**: candidates are fetched best first through the web fetcher (SSRF guard, gate, robots.txt, politeness,
   limits) until ``LYRA_WEB_PAGES_PER_QUERY`` pages (and no more than the task's remaining page budget) were read;
   a refused one makes room for the next. The pages go through the ingest path like any document.

Every candidate's fate is kept in the job result (``read``, ``refused`` with the fetcher's code and reason,
``blocked``, ``duplicate``, ``already_read``, ``invalid_url``, ``below_floor`` with its relevance, ``paused`` when
its domain waits for a person in this task, ``not_fetched`` when the pages for this query were read already), with
which engine answered, what each engine did, and the paper identifiers (DOI, arXiv, PMID) found in the results and
in the pages read.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from lyra.core.errors import InvalidInputError
from lyra.core.net import normalise_url
from lyra.core.settings import PipelineSettings, SearchSettings
from lyra.graph.store import GraphStore
from lyra.ml.learned_rules import RuleSource, domain_penalties
from lyra.ml.protocols import Embedder
from lyra.ml.ranking import CandidateRanker
from lyra.ml.relevance import relevance
from lyra.models.ingest import IngestReport
from lyra.models.trust import DomainDecision
from lyra.services.freshness import remember_validators
from lyra.sources.domain_patterns import normalise_domain
from lyra.sources.local_files import SourceDocument
from lyra.sources.scholarly import find_identifiers
from lyra.sources.search import SearchEngine, SearchEngineError, SearchResult, http_url
from lyra.sources.untrusted import source_text
from lyra.sources.web import FetchOutcome
from lyra.sources.web.extract import Link

log = logging.getLogger(__name__)

__all__ = ["Candidate", "WebSearch", "WebSearchRun", "normalise_url"]

MAX_ANCHORS = 6  # the query and at most five claims rank the candidates
MAX_IDENTIFIERS = 50


class Fetcher(Protocol):
    """What the search needs of the web fetcher (:class:`lyra.sources.web.WebFetcher` fits)."""

    def fetch(self, url: str, *, cookies: Mapping[str, str] | None = None) -> FetchOutcome: ...


class PersonQueue(Protocol):
    """What the search needs of the human-in-the-loop queue (:class:`lyra.services.interventions.InterventionService`
    fits): the domains paused for a task, and the cookies a person gave it."""

    def domain_paused(self, task_id: str, domain: str) -> list[str]: ...

    def cookies_for(self, task_id: str) -> dict[str, str]: ...


class Gate(Protocol):
    """The domain decision (:class:`lyra.services.domains.DomainGate` fits)."""

    def active_rules(self) -> list[dict[str, Any]]: ...

    def decide(self, domain: str, rules: list[dict[str, Any]] | None = None) -> DomainDecision: ...

    def page_blocks(self, urls: list[str]) -> dict[str, dict[str, Any]]: ...

    def page_block_text(self, url: str, row: dict[str, Any]) -> str: ...

    def task_skip_reason(self, task_id: str, domain: str) -> str | None: ...


@dataclass
class Candidate:
    """One search result on its way to becoming a page; ``fate`` says what became of it."""

    url: str
    key: str
    title: str
    snippet: str
    engine: str
    engine_rank: int
    domain: str = ""
    category: str | None = None
    category_weight: float | None = None
    score: float | None = None
    best_for: str | None = None  # "query" or "claim": what it ranked best against
    relevance: float | None = None  # its best absolute relevance to the task's claims (the floor's score)
    fate: str = "pending"
    code: str | None = None
    reason: str | None = None
    final_url: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "url": self.url,
            "title": source_text(self.title, 200),  # the engine's words for a page: marked as data
            "engine": self.engine,
            "engine_rank": self.engine_rank,
            "domain": self.domain,
            "fate": self.fate,
        }
        if self.category is not None:
            out["category"] = self.category
            out["category_weight"] = self.category_weight
        if self.score is not None:
            out["score"] = round(self.score, 4)
            out["best_for"] = self.best_for
        if self.relevance is not None:
            out["relevance"] = round(self.relevance, 4)
        for key in ("code", "reason", "final_url"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


def result_text(candidate: Candidate) -> str:
    """What a search result is ranked and held to the relevance floor by: ``title. snippet`` (the URL when both are
    empty)."""
    return f"{candidate.title}. {candidate.snippet}".strip(" .") or candidate.url


@dataclass
class WebSearchRun:
    """What one web search did (kept in the job result under ``web``)."""

    query: str
    engine: str | None = None  # the engine whose results were used
    engines: list[dict[str, Any]] = field(default_factory=list)
    results: int = 0
    candidates: list[Candidate] = field(default_factory=list)
    pages_read: int = 0
    relevance_floor: float | None = None  # the floor the candidates were held to (None: none was fetchable)
    warnings: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    links: dict[str, tuple[Link, ...]] = field(default_factory=dict)  # a read page's URL -> its main content's links
    fetched: dict[str, FetchOutcome] = field(default_factory=dict)  # a read page's URL -> its fetch (validators)

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "engine": self.engine,
            "engines": self.engines,
            "results": self.results,
            "fates": dict(Counter(c.fate for c in self.candidates)),
            "candidates": [c.as_dict() for c in self.candidates],
            "pages_read": self.pages_read,
            "relevance_floor": self.relevance_floor,
            "below_floor": sum(1 for c in self.candidates if c.fate == "below_floor"),
            "warnings": self.warnings,
        }

    def add_identifiers(self, text: str) -> None:
        for pid in find_identifiers(text):
            shown = f"{pid.kind}:{pid.value}"
            if shown not in self.identifiers and len(self.identifiers) < MAX_IDENTIFIERS:
                self.identifiers.append(shown)


IngestDocuments = Callable[[Sequence[SourceDocument]], IngestReport]
Progress = Callable[[str, int], None]


class WebSearch:
    """Runs the web part of a ``query`` job (see the module docstring). Engines, fetcher, embedder and ranker are
    the process's own (built once in the composition root); ``notes`` say why engines are missing, if any."""

    def __init__(
        self,
        settings: SearchSettings,
        pipeline: PipelineSettings,
        store: GraphStore,
        engines: Sequence[SearchEngine],
        fetcher: Fetcher,
        embedder: Embedder,
        ranker: CandidateRanker,
        gate: Gate,
        notes: Sequence[str] = (),
        ranking_rules: RuleSource | None = None,
        interventions: PersonQueue | None = None,
    ) -> None:
        self.settings = settings
        self.pipeline = pipeline  # the relevance floor and weights candidate pages are measured with
        self.store = store
        self.engines = list(engines)
        self.ranking_rules = ranking_rules  # learned CONSTRAINT rules lowering a domain's weight (decision record 0013)
        self.interventions = interventions  # paused domains are skipped, a person's cookies sent
        self.fetcher = fetcher
        self.embedder = embedder
        self.ranker = ranker
        self.gate = gate
        self.notes = list(notes)

    @property
    def available(self) -> bool:
        return bool(self.engines)

    def run(
        self,
        task_id: str,
        query: str,
        claims: Sequence[str],
        pages_left: int | None,
        ingest: IngestDocuments,
        progress: Progress,
    ) -> tuple[IngestReport | None, WebSearchRun]:
        """Search, rank, fetch and ingest for one query; reads at most ``pages_left`` pages (None: no limit)."""
        run = WebSearchRun(query=query)
        if not self.engines:
            run.warnings.append("no web search engine is configured: " + ("; ".join(self.notes) or "none listed"))
            return None, run
        results = self.search(query, run)
        for result in results:
            run.add_identifiers(f"{result.url}\n{result.title}\n{result.snippet}")
        candidates = self.candidates(task_id, query, claims, results, run)
        want = self.settings.web_pages_per_query
        if pages_left is not None:
            want = min(want, pages_left)
        documents = self.fetch(candidates, want, progress, run, task_id)
        for document in documents:
            run.add_identifiers(f"{document.doi or ''}\n{document.text}")
        report = ingest(documents) if documents else None
        if report is not None:
            remember_validators(self.store, report.page_ids, run.fetched)
        return report, run

    # ------------------------------------------------------------------ 1. search
    def search(self, query: str, run: WebSearchRun) -> list[SearchResult]:
        """The first engine's results that has any, in engine order; every engine asked is recorded in ``run``."""
        limit = self.settings.web_search_results
        for position, engine in enumerate(self.engines):
            start = time.monotonic()
            notes: list[str] = []
            entry: dict[str, Any] = {"engine": engine.name}
            try:
                results = engine.search(query, limit, notes)
            except SearchEngineError as exc:
                entry.update(state="failed", code=exc.code, error=exc.reason)
                run.warnings.append(f"web search engine {exc.engine} failed ({exc.code}): {exc.reason}")
                results = []
            except Exception as exc:  # an engine's bug must not fail the task: the next engine is asked
                log.exception("web search engine %s crashed", engine.name)
                entry.update(state="failed", code="error", error=f"{type(exc).__name__}: {exc}")
                run.warnings.append(f"web search engine {engine.name} failed: {type(exc).__name__}: {exc}")
                results = []
            else:
                entry["state"] = "answered" if results else "empty"
                if not results:
                    run.warnings.append(f"web search engine {engine.name} found nothing for {query!r}")
            entry.update(results=len(results), seconds=round(time.monotonic() - start, 3))
            if notes:
                entry["warnings"] = notes
                run.warnings.extend(notes)
            run.engines.append(entry)
            if results:
                run.engine = engine.name
                run.results = len(results)
                run.engines.extend({"engine": e.name, "state": "not_asked"} for e in self.engines[position + 1 :])
                return results
        if len(self.engines) > 1 or run.engines[0].get("state") == "failed":
            run.warnings.append(
                f"no web search engine gave results for {query!r} (asked: {', '.join(e.name for e in self.engines)})"
            )
        return []

    # ------------------------------------------------------------------ 2.-4. candidates, ranking, floor
    def candidates(
        self, task_id: str, query: str, claims: Sequence[str], results: Sequence[SearchResult], run: WebSearchRun
    ) -> list[Candidate]:
        """All results as candidates with their fate so far; the fetchable ones ranked best first (returned)."""
        seen: dict[str, Candidate] = {}
        fetchable: list[Candidate] = []
        decisions: dict[str, DomainDecision | str] = {}
        skips: dict[str, str | None] = {}  # domain -> why this task no longer uses it (None: it does)
        rules: list[dict[str, Any]] | None = None
        for result in results:
            candidate = Candidate(
                url=result.url,
                key=normalise_url(result.url) if http_url(result.url) else result.url,
                title=result.title,
                snippet=result.snippet,
                engine=result.engine,
                engine_rank=result.rank,
            )
            run.candidates.append(candidate)
            if not http_url(result.url):
                candidate.fate, candidate.reason = "invalid_url", "not an absolute http(s) URL"
                continue
            if candidate.key in seen:
                candidate.fate, candidate.reason = "duplicate", f"the same page as {seen[candidate.key].url}"
                continue
            seen[candidate.key] = candidate
            host = urlsplit(result.url).hostname or ""
            try:
                candidate.domain = normalise_domain(host).removeprefix("www.")
            except ValueError as exc:
                candidate.fate, candidate.reason = "invalid_url", f"{host!r} is not a domain name: {exc}"
                continue
            if candidate.domain not in decisions:
                if rules is None:
                    rules = self.gate.active_rules()
                try:
                    decisions[candidate.domain] = self.gate.decide(candidate.domain, rules)
                except InvalidInputError as exc:
                    decisions[candidate.domain] = exc.reason
            decision = decisions[candidate.domain]
            if isinstance(decision, str):
                candidate.fate, candidate.reason = "invalid_url", decision
                continue
            candidate.category = decision.domain_category
            candidate.category_weight = decision.category_weight
            if not decision.allowed:
                candidate.fate, candidate.code = "blocked", "blocked_domain"
                candidate.reason = (
                    f"domain {decision.domain} is blocked ({decision.domain_block_reason}): {decision.reason}"
                )
                continue
            if candidate.domain not in skips:
                skips[candidate.domain] = self.gate.task_skip_reason(task_id, candidate.domain)
            if skips[candidate.domain] is not None:  # a page of it carried a dangerous pattern for this task
                candidate.fate, candidate.code, candidate.reason = (
                    "blocked",
                    "task_skipped_domain",
                    skips[candidate.domain],
                )
                continue
            fetchable.append(candidate)
        blocked_pages = self.gate.page_blocks([c.url for c in fetchable]) if fetchable else {}
        for candidate in fetchable:
            if candidate.url in blocked_pages:
                candidate.fate, candidate.code = "blocked", "blocked_page"
                candidate.reason = self.gate.page_block_text(candidate.url, blocked_pages[candidate.url])
        fetchable = [c for c in fetchable if c.fate == "pending"]
        if fetchable:
            row = self.store.run("search/task_read_urls", {"task_id": task_id, "urls": [c.url for c in fetchable]})
            known = set(row[0]["urls"]) if row else set()
            for candidate in fetchable:
                if candidate.url in known:
                    candidate.fate, candidate.reason = "already_read", "this task has read the page already"
            fetchable = [c for c in fetchable if c.fate == "pending"]
        if not fetchable:
            return []
        vectors = np.asarray(self.embedder.embed([result_text(c) for c in fetchable]), dtype=np.float32)
        ranked = self.rank(query, claims, fetchable, vectors)
        return self.above_floor(query, claims, fetchable, vectors, ranked, run)

    def above_floor(
        self,
        query: str,
        claims: Sequence[str],
        candidates: Sequence[Candidate],
        vectors: npt.NDArray[np.float32],
        ranked: list[Candidate],
        run: WebSearchRun,
    ) -> list[Candidate]:
        """``ranked`` less the candidates whose title and snippet fall below ``LYRA_RELEVANCE_FLOOR`` against every
        claim of the task (the query when it has none); those become ``below_floor`` with their relevance."""
        anchors = list(dict.fromkeys(c for c in claims if c.strip())) or [query]
        against = "the query (the task has no claim yet)" if anchors == [query] else "the task's claims"
        floor = self.pipeline.relevance_floor
        scores = relevance(
            anchors,
            np.asarray(self.embedder.embed(anchors), dtype=np.float32),
            [result_text(c) for c in candidates],
            vectors,
            w_emb=self.pipeline.relevance_weight_embedding,
            w_terms=self.pipeline.relevance_weight_terms,
        )
        best = scores.max(axis=0)
        run.relevance_floor = floor
        for candidate, value in zip(candidates, best, strict=True):
            candidate.relevance = float(value)
            if candidate.relevance < floor:
                candidate.fate, candidate.code = "below_floor", "below_relevance_floor"
                candidate.reason = (
                    f"relevance {candidate.relevance:.3f} of its title and snippet to {against} is below "
                    f"LYRA_RELEVANCE_FLOOR={floor:g}; not fetched"
                )
        dropped = sum(1 for c in candidates if c.fate == "below_floor")
        if dropped:
            log.info(
                "web search: %d of %d result(s) below the relevance floor %g, not fetched",
                dropped,
                len(candidates),
                floor,
            )
        return [c for c in ranked if c.fate == "pending"]

    def rank(
        self,
        query: str,
        claims: Sequence[str],
        candidates: list[Candidate],
        vectors: npt.NDArray[np.float32] | None = None,
    ) -> list[Candidate]:
        """``candidates`` best first: each one's best score against the query and the claims (module docstring).
        ``vectors``: the candidates' ``title. snippet`` embeddings when the caller has them."""
        if not candidates:
            return []
        texts = [result_text(c) for c in candidates]
        anchors = list(dict.fromkeys([query, *[c for c in claims if c.strip()]]))[:MAX_ANCHORS]
        if vectors is None:
            vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        anchor_vectors = self.embedder.embed(anchors)
        penalties = domain_penalties(self.ranking_rules()) if self.ranking_rules else {}
        weights = [
            (c.category_weight if c.category_weight is not None else 1.0) * penalties.get(c.domain.lower(), 1.0)
            for c in candidates
        ]
        for position, anchor in enumerate(anchors):
            ranked = self.ranker.rank(
                anchor, anchor_vectors[position], texts, vectors, top_k=len(texts), weights=weights
            )
            for item in ranked:
                value = item.score
                if item.rerank is not None:  # the reranker's order: its sigmoid times the weight (ranking.py)
                    value = item.category_weight / (1.0 + math.exp(-max(min(item.rerank, 50.0), -50.0)))
                candidate = candidates[item.index]
                if candidate.score is None or value > candidate.score:
                    candidate.score = value
                    candidate.best_for = "query" if position == 0 else "claim"
        return sorted(candidates, key=lambda c: (-(c.score if c.score is not None else -1e9), c.engine_rank))

    # ------------------------------------------------------------------ 5. fetch
    def fetch(
        self,
        ranked: Sequence[Candidate],
        want: int,
        progress: Progress,
        run: WebSearchRun,
        task_id: str | None = None,
    ) -> list[SourceDocument]:
        """Fetch ``ranked`` in order until ``want`` pages were read; the rest are ``not_fetched``. For a task with a
        person queue, a candidate on a domain paused for the task (a wall waits for a person) is ``paused``, not
        fetched, and the cookies a person gave the task are sent (to their own domains only)."""
        documents: list[SourceDocument] = []
        read_urls: dict[str, str] = {}
        queue = self.interventions if task_id is not None else None
        cookies = queue.cookies_for(task_id) if queue is not None and task_id is not None else {}
        for candidate in ranked:
            if len(documents) >= want:
                candidate.fate = "not_fetched"
                candidate.reason = (
                    f"{want} page(s) read for this query already (LYRA_WEB_PAGES_PER_QUERY="
                    f"{self.settings.web_pages_per_query}, or the task's page budget)"
                )
                continue
            if queue is not None and task_id is not None:
                pending = queue.domain_paused(task_id, candidate.domain)
                if pending:
                    candidate.fate, candidate.code = "paused", "domain_paused"
                    candidate.reason = (
                        f"{candidate.domain} is paused for this task until a person resolves {', '.join(pending)}"
                    )
                    continue
            progress("web", 0)  # a stop request or the time budget ends the job here
            outcome = self.fetcher.fetch(candidate.url, cookies=cookies)
            candidate.final_url = outcome.final_url if outcome.final_url != candidate.url else None
            if outcome.document is None:
                candidate.fate, candidate.code, candidate.reason = "refused", outcome.code, outcome.reason
                continue
            landed = normalise_url(outcome.document.url)
            if landed in read_urls:
                candidate.fate = "duplicate"
                candidate.reason = f"led to the same page as {read_urls[landed]}"
                continue
            read_urls[landed] = candidate.url
            candidate.fate, candidate.code = "read", "ok"
            documents.append(outcome.document)
            run.links[outcome.document.url] = outcome.links
            run.fetched[outcome.document.url] = outcome
        run.pages_read = len(documents)
        return documents
