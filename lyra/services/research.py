"""What a research job does: read its target into the task's evidence graph within the task's budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse

from lyra.core.errors import BudgetExhausted, InvalidInputError, LyraError, SourceUnavailable
from lyra.core.text import question_cue
from lyra.graph.store import GraphStore
from lyra.models.api import AcademicSearchMode, Budget
from lyra.models.ingest import IdentifierMention, IngestReport
from lyra.services.academic import AcademicResearch, AcademicRun, is_academic_query
from lyra.services.freshness import remember_validators
from lyra.services.ingest import IngestService
from lyra.services.jobs import ClaimedJob, JobContext, JobOutcome, Park, resolve_file_target
from lyra.services.status import academic_usage
from lyra.sources.domain_patterns import normalise_domain
from lyra.sources.local_files import SourceDocument
from lyra.sources.scholarly import PaperId, parse_identifier

if TYPE_CHECKING:
    from lyra.services.domains import DomainGate
    from lyra.services.interventions import InterventionService
    from lyra.services.web_citations import CitationDetector
    from lyra.services.web_search import WebSearch
    from lyra.sources.web import WebFetcher
    from lyra.sources.web.extract import Link

MAX_SKIPPED_IN_RESULT = 20


def report_summary(report: IngestReport) -> dict[str, object]:
    """The part of an ingest report a job keeps as its result (shown by get_status detail=full)."""
    return {
        "documents": report.documents,
        "pages_new": report.pages_new,
        "pages_existing": report.pages_existing,
        "fragments_new": report.fragments_new,
        "fragments_existing": report.fragments_existing,
        "fragments_near_duplicate": report.fragments_near_duplicate,
        "pairs_judged": report.pairs_judged,
        "pairs_from_cache": report.pairs_from_cache,
        "edges": report.edges,
        "edges_existing": report.edges_existing,
        "extracted_claims": report.extracted_claims,
        "skipped": [s.model_dump() for s in report.skipped[:MAX_SKIPPED_IN_RESULT]],
        "skipped_total": len(report.skipped),
        "seconds_total": round(report.seconds_total, 3),
        **({"notices": list(report.notices)} if report.notices else {}),
        # pages read again: passages that left them or came back (decision record 0016)
        **({"passages": report.passages.model_dump()} if report.passages.any else {}),
    }


PAPER_HOSTS = frozenset(
    {
        "doi.org",
        "dx.doi.org",
        "semanticscholar.org",
        "api.semanticscholar.org",
        "openalex.org",
        "arxiv.org",
        "pubmed.ncbi.nlm.nih.gov",
    }
)


SUMMED_FIELDS = (
    "documents",
    "pages_new",
    "pages_existing",
    "fragments_new",
    "fragments_existing",
    "fragments_near_duplicate",
    "pairs_ranked",
    "pairs_judged",
    "pairs_from_cache",
    "edges_existing",
    "seconds_total",
    "seconds_in_models",
)


def combined_report(reports: Sequence[IngestReport]) -> IngestReport:
    """One report for several ingest runs of one job (a query's web pages, then its academic abstracts)."""
    merged = reports[0].model_copy(deep=True)
    for other in reports[1:]:
        for name in SUMMED_FIELDS:
            setattr(merged, name, getattr(merged, name) + getattr(other, name))
        for label, count in other.edges.items():
            merged.edges[label] = merged.edges.get(label, 0) + count
        merged.skipped.extend(other.skipped)
        merged.notices.extend(other.notices)
        merged.extracted_claims.extend(other.extracted_claims)
        merged.passages.add(other.passages)
    return merged


def web_domain(url: str) -> str:
    """The domain a URL's politeness, pause and cookies are kept under (the fetcher's own spelling)."""
    host = urlparse(url).hostname or ""
    try:
        return normalise_domain(host).removeprefix("www.")
    except ValueError:
        return host.lower().removeprefix("www.")


def paper_identifier(url: str) -> PaperId | None:
    """The paper a URL names when it is a DOI resolver, Semantic Scholar, OpenAlex, arXiv or PubMed address."""
    host = (urlparse(url).hostname or "").lower().removeprefix("www.")
    return parse_identifier(url) if host in PAPER_HOSTS else None


def _merged_academic(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two academic parts of one job (a query's search, then identifier enrichment) as one: counts and API counters
    added, lists joined, the rest from the first."""
    merged = dict(first)
    for key, value in second.items():
        if isinstance(value, bool) or key not in merged:
            merged.setdefault(key, value)
        elif isinstance(value, int):
            merged[key] = int(merged.get(key) or 0) + value
        elif isinstance(value, list):
            merged[key] = [*(merged.get(key) or []), *value]
    api: dict[str, dict[str, int]] = {name: dict(counters) for name, counters in (first.get("api") or {}).items()}
    for name, counters in (second.get("api") or {}).items():
        bucket = api.setdefault(name, {})
        for counter, n in counters.items():
            bucket[counter] = bucket.get(counter, 0) + n
    merged["api"] = api
    return merged


def _unique_identifiers(mentions: Sequence[IdentifierMention]) -> dict[PaperId, list[IdentifierMention]]:
    """Each identifier once with the mentions naming it, the documents' own identifiers first."""
    found: dict[PaperId, list[IdentifierMention]] = {}
    for mention in sorted(mentions, key=lambda m: not m.own):  # a stable sort keeps the reading order
        pid = parse_identifier(mention.identifier)
        if pid is not None:
            found.setdefault(pid, []).append(mention)
    return found


ClaimSource = Literal["question", "given", "llm", "existing"]


def research_claims(
    question: str, given: Sequence[str], existing: Sequence[str], extract: Callable[[str], list[str]]
) -> tuple[list[str], ClaimSource]:
    """The claims ``lyra research`` adds for ``question`` (decision record 0010: a question is never judged), and where
    they come from. ``given``: the claims the person or assistant wrote (``--claim``), already checked not to be
    questions; ``existing``: the task's claims when it is continued; ``extract``: the LLM's claims for a question.

    * A statement (not a question): it is the task's first claim itself (``question``); ``given`` claims join it.
    * A question with ``given`` claims: those.
    * A question, no ``given`` claims, a task holding claims already: nothing new (the task is continued).
    * A question and nothing else: the LLM's claims; none usable is an InvalidInputError naming ``claims``.

    Claims the task holds already (the same text) are not added twice."""
    known = set(existing)
    new = [c for c in dict.fromkeys(given) if c not in known and c != question]
    if question_cue(question) is None:
        return new, "question"
    if given:
        return new, "given"
    if existing:
        return [], "existing"
    extracted = [c for c in dict.fromkeys(extract(question)) if question_cue(c) is None]
    if not extracted:
        raise InvalidInputError(
            "claims",
            f"{question!r} is a question, which is never judged, and the LLM turned it into no claim",
            hint="give the statements to check with --claim (repeatable), e.g. --claim 'Access to microcredit "
            "increases household consumption'",
        )
    return extracted, "llm"


def academic_search_decision(mode: AcademicSearchMode, query: str, web_pages: int) -> tuple[bool, str]:
    """Whether a query job searches the academic APIs, and why (kept in the job result, decision record 0010).

    ``always`` (the default, ``LYRA_ACADEMIC_SEARCH``): every query; ``off``: never; ``auto``: when the query looks
    academic (:func:`is_academic_query`, decision record 0011) or the web search read no page for it."""
    if mode == "off":
        return False, "the academic search is off for this job (options.academic_search or LYRA_ACADEMIC_SEARCH)"
    if mode == "always":
        return True, "the academic search runs for every query (academic_search = always)"
    if is_academic_query(query):
        return True, "academic_search = auto and the query looks academic"
    if web_pages == 0:
        return True, (
            "academic_search = auto: the web search read no page for this query, so the academic APIs were searched "
            "although the query does not look academic (is_academic_query false)"
        )
    return False, (
        f"academic_search = auto, the query does not look academic (is_academic_query false) and the web search read "
        f"{web_pages} page(s); set options.academic_search = always (or LYRA_ACADEMIC_SEARCH=always) to search anyway"
    )


def skipped_academic(reason: str) -> dict[str, Any]:
    """The ``academic`` part of a query job's result when the academic search did not run: it says so, and why."""
    return {
        **AcademicRun(warnings=[f"academic search skipped: {reason}"]).as_dict(),
        "searched": False,
        "reason": reason,
    }


class ResearchExecutor:
    """Runs one job. ``file`` targets go through the ingest pipeline; ``doi`` targets and paper URLs (doi.org,
    Semantic Scholar, OpenAlex, arXiv, PubMed) go through the academic flow (search, citation expansion, abstract
    pages) into the same ingest path; other ``url`` targets through the web fetcher (SSRF guard, domain gate,
    robots.txt, politeness, HTML and PDF extraction) into the same ingest path, then web citation detection of the
    page's links. A ``query`` target is searched on the web (``search``: engines → ranked candidate URLs → fetched
    pages; :mod:`lyra.services.web_search`; ``options.web_search = false`` skips it) and in the academic APIs as
    ``academic_search`` says (:func:`academic_search_decision`: the target's option, else the executor's default,
    ``LYRA_ACADEMIC_SEARCH``); both in one result, which says when and why either part was skipped. The paper
    identifiers of every page read may go to the academic resolver (identifier enrichment)."""

    def __init__(
        self,
        store: GraphStore,
        ingest: Callable[[], IngestService],
        allowed_roots: Sequence[Path],
        academic: Callable[[int | None], AcademicResearch] | None = None,
        max_api_requests: int | None = None,
        web: Callable[[], WebFetcher] | None = None,
        search: Callable[[], WebSearch] | None = None,
        enrichment_max: int = 0,
        enrich_local: bool = False,
        citations: Callable[[], CitationDetector] | None = None,
        interventions: InterventionService | None = None,
        academic_search: AcademicSearchMode = "always",
        gate: DomainGate | None = None,
    ) -> None:
        self.store = store
        self.gate = gate  # the domains a task stopped using for a dangerous page are not fetched for it
        self.academic_search = academic_search  # a query target's default (its options.academic_search wins)
        self._ingest = ingest
        self.allowed_roots = list(allowed_roots)
        self._academic = academic  # built per job with the task's remaining API request budget
        self.max_api_requests = max_api_requests
        self._web = web  # the process's one fetcher (its politeness state is shared by every worker)
        self._search = search  # the web search over the same fetcher
        self.enrichment_max = enrichment_max  # identifiers per job sent to the resolver (0: no enrichment)
        self.enrich_local = enrich_local  # file targets too, unless a target's options say otherwise
        self._citations = citations  # web citation detection of fetched pages (None: off)
        self.interventions = interventions  # the human-in-the-loop queue (paused domains, cookies a person gave)

    def __call__(self, job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        row = self.store.run("jobs/task_budget", {"task_id": job.task_id})[0]
        budget = Budget.of(row["max_pages"], row["pages_used"], row["max_seconds"], row["seconds_used"])
        pages_left, seconds_left = budget.pages_remaining, budget.seconds_remaining
        if pages_left == 0:
            raise BudgetExhausted(f"task {job.task_id!r} used its page budget ({budget.max_pages} pages)")
        if seconds_left == 0:
            raise BudgetExhausted(f"task {job.task_id!r} used its time budget ({budget.max_seconds} s)")
        ctx.check()

        def progress(_counter: str, _n: int) -> None:
            ctx.check()
            if seconds_left is not None and ctx.elapsed > seconds_left:
                raise BudgetExhausted(
                    f"task {job.task_id!r} ran out of its time budget ({budget.max_seconds} s) during this job; "
                    "queue the target again after raising the budget to finish it"
                )

        if job.kind == "file":
            path = resolve_file_target(job.value, self.allowed_roots, "value")
            report = self._ingest().ingest(
                [path],
                job.task_id,
                extract_claims=bool(job.options.get("extract_claims", False)),
                progress=progress,
                max_documents=pages_left,
                allowed_roots=self.allowed_roots,
            )
            summary = report_summary(report)
            return self._with_enrichment(job, summary, report.identifiers, report.documents, pages_left, progress)
        if job.kind == "doi":
            return self._academic_job(job, PaperId("doi", job.value), None, pages_left, progress)
        if job.kind == "url":
            pid = paper_identifier(job.value)
            if pid is None:
                return self._web_job(job, pages_left, progress)
            return self._academic_job(job, pid, None, pages_left, progress)
        return self._query_job(job, pages_left, progress)

    def _web_job(self, job: ClaimedJob, pages_left: int | None, progress: Callable[[str, int], None]) -> JobOutcome:
        """A web page or PDF: fetched through the one guarded, polite fetcher, then the ingest path. A refusal
        (SSRF guard, blocked domain or page, robots.txt, limits, type) fails the job with its code and reason, and so
        does a domain the task stopped using (``task_skipped_domain``: a page of it carried a dangerous pattern). A
        CAPTCHA, login or consent wall parks the job for a person (an intervention item; the domain is paused for the
        task); a job whose domain is paused for its task waits without fetching; cookies a person gave are sent."""
        if self._web is None:
            raise SourceUnavailable("source not available: web fetching is not configured in this service")
        domain = web_domain(job.value)
        skipped = self.gate.task_skip_reason(job.task_id, domain) if self.gate is not None else None
        if skipped is not None:
            raise SourceUnavailable(f"task_skipped_domain: {skipped} (nothing was read from {job.value!r})")
        cookies: dict[str, str] = {}
        if self.interventions is not None:
            pending = self.interventions.domain_paused(job.task_id, domain)
            if pending:
                reason = f"waiting: {domain} is paused for this task until a person resolves {', '.join(pending)}"
                return JobOutcome(result={"paused_domain": domain}, park=Park(domain=domain, error=reason))
            cookies = self.interventions.cookies_for(job.task_id)
        outcome = self._web().fetch(job.value, cookies=cookies)
        fetch = {
            "code": outcome.code,
            "final_url": outcome.final_url,
            "status": outcome.status,
            "content_type": outcome.content_type,
            "redirects": list(outcome.redirects),
            "bytes": outcome.bytes_read,
            "fetch_seconds": round(outcome.fetch_seconds, 3),
            "wait_seconds": round(outcome.wait_seconds, 3),
            "extract_seconds": round(outcome.extract_seconds, 3),
            "render_seconds": round(outcome.render_seconds, 3),
            "links": len(outcome.links),
        }
        if outcome.challenge is not None and self.interventions is not None:
            kind, reason = outcome.challenge.kind, outcome.challenge.reason
            where = outcome.final_url or job.value
            park = Park(
                domain=web_domain(where),
                error=f"waiting for a person: {kind} at {where} ({reason}); see get_auth_queue",
                kind=kind,
                url=where,
                reason=reason,
            )
            return JobOutcome(result={"fetch": fetch}, park=park)
        if outcome.document is None:
            raise SourceUnavailable(f"{outcome.code}: {outcome.reason} (nothing was read from {job.value!r})")
        report = self._ingest().ingest_documents([outcome.document], job.task_id, progress=progress)
        remember_validators(self.store, report.page_ids, {outcome.document.url: outcome})
        result: dict[str, object] = report_summary(report)
        result["fetch"] = fetch
        found = self._detect_citations(report, [outcome.document], {outcome.document.url: outcome.links}, progress)
        if found:
            result["citations"] = found[0]
        return self._with_enrichment(job, result, report.identifiers, report.documents, pages_left, progress)

    def _detect_citations(
        self,
        report: IngestReport,
        documents: Sequence[SourceDocument],
        links: dict[str, tuple[Link, ...]],
        progress: Callable[[str, int], None],
    ) -> list[dict[str, object]]:
        """Web citation detection of the read pages that have links (nothing when it is off)."""
        if self._citations is None:
            return []
        found: list[dict[str, object]] = []
        for doc in documents:
            page_id = report.page_ids.get(doc.url)
            if page_id is not None and links.get(doc.url):
                run = self._citations().detect(
                    page_id, doc.url, doc.title, doc.text, links[doc.url], lambda: progress("citations", 0)
                )
                found.append({"url": doc.url, **run.as_dict()})
        return found

    # ------------------------------------------------------------ identifier enrichment
    def _with_enrichment(
        self,
        job: ClaimedJob,
        result: dict[str, object],
        mentions: Sequence[IdentifierMention],
        pages: int,
        pages_left: int | None,
        progress: Callable[[str, int], None],
    ) -> JobOutcome:
        """The job's outcome (``pages`` read so far) after identifier enrichment (decision record 0011) of the
        identifiers the job met: they are listed; when enrichment is on for the job they go through the academic
        resolver, each paper found gets its abstract page (read within the page budget left) and a ``CITES
        {citation_source: extraction}`` edge from every page whose text names it. A failing source is a warning: what
        was read stays read. The enrichment's academic counters join the job's ``academic`` part (the task's API
        budget)."""
        found = _unique_identifiers(mentions)
        if not found:
            return JobOutcome(result=result, pages=pages)
        result["identifiers"] = [str(pid) for pid in list(found)[:MAX_SKIPPED_IN_RESULT]]
        wanted = job.options.get("enrich_identifiers")
        if wanted is None:
            wanted = job.kind != "file" or self.enrich_local
        limit = self.enrichment_max if wanted else 0
        if limit == 0:
            return JobOutcome(result=result, pages=pages)
        run = AcademicRun(identifiers=[str(pid) for pid in list(found)[:limit]])
        unavailable, budget = None, None
        if self._academic is None:
            unavailable = "the academic sources are not configured in this service"
        else:
            try:
                budget = self._remaining_requests(job.task_id)
            except BudgetExhausted as exc:
                unavailable = exc.message
        extra: IngestReport | None = None
        if self._academic is None or unavailable is not None:
            run.warnings.append(f"identifiers not resolved: {unavailable}")
        else:
            left = None if pages_left is None else max(pages_left - pages, 0)
            with self._academic(budget) as academic:
                extra = self._enrich(academic, job.task_id, found, limit, left, run, progress)
                run.api = academic.sources.usage()
        before = result.get("academic")
        result["academic"] = _merged_academic(before, run.as_dict()) if isinstance(before, dict) else run.as_dict()
        if extra is None:
            return JobOutcome(result=result, pages=pages)
        result["enrichment"] = report_summary(extra)
        return JobOutcome(result=result, pages=pages + extra.documents)

    def _enrich(
        self,
        academic: AcademicResearch,
        task_id: str,
        found: dict[PaperId, list[IdentifierMention]],
        limit: int,
        pages_left: int | None,
        run: AcademicRun,
        progress: Callable[[str, int], None],
    ) -> IngestReport | None:
        resolved = academic.resolve_identifiers(list(found)[:limit], run, lambda: progress("academic", 0))
        papers = [paper for _, paper in resolved]
        page_of = academic.write_graph(papers, [], run)
        pairs: set[tuple[str, str]] = set()
        for pid, paper in resolved:
            cited = page_of(paper)
            for mention in found[pid]:
                if cited is not None and not mention.own and mention.page_id not in (None, cited):
                    assert mention.page_id is not None
                    pairs.add((mention.page_id, cited))
        if pairs:
            written = academic.evidence.merge_citations(
                [{"citing_page_id": a, "cited_page_id": b, "citation_source": "extraction"} for a, b in sorted(pairs)]
            )
            run.citations += len(pairs)
            run.citations_new += written.created
        ingest = self._ingest()
        return academic.read(
            papers,
            pages_left,
            lambda documents: ingest.ingest_documents(documents, task_id, progress=progress),
            run,
        )

    def _remaining_requests(self, task_id: str) -> int | None:
        """Scholarly API requests the task may still send (its finished jobs' counts against the budget)."""
        if self.max_api_requests is None:
            return None
        usage = academic_usage(self.store.run("jobs/task_jobs", {"task_id": task_id}), self.max_api_requests)
        used = sum(counters.get("requests", 0) for counters in usage.api.values()) if usage else 0
        remaining = max(self.max_api_requests - used, 0)
        if remaining == 0:
            raise BudgetExhausted(
                f"task {task_id!r} used its scholarly API budget ({self.max_api_requests} requests; "
                "LYRA_SCHOLARLY_MAX_REQUESTS_PER_TASK)"
            )
        return remaining

    def _academic_job(
        self,
        job: ClaimedJob,
        pid: PaperId | None,
        query: str | None,
        pages_left: int | None,
        progress: Callable[[str, int], None],
    ) -> JobOutcome:
        report, run = self._academic_run(job, pid, query, pages_left, progress)
        result: dict[str, object] = report_summary(report) if report is not None else {"documents": 0}
        result["academic"] = run.as_dict()
        return JobOutcome(result=result, pages=report.documents if report is not None else 0)

    def _academic_run(
        self,
        job: ClaimedJob,
        pid: PaperId | None,
        query: str | None,
        pages_left: int | None,
        progress: Callable[[str, int], None],
        run: AcademicRun | None = None,
    ) -> tuple[IngestReport | None, AcademicRun]:
        if self._academic is None:
            raise SourceUnavailable("source not available: the academic sources are not configured in this service")
        run = run or AcademicRun()
        with self._academic(self._remaining_requests(job.task_id)) as academic:
            try:
                return self._academic_read(job, academic, run, pid, query, pages_left, progress)
            except LyraError as exc:  # the requests sent so far count against the task's API budget all the same
                run.api = academic.sources.usage()
                exc.job_result = {"academic": run.as_dict()}
                raise

    def _academic_read(
        self,
        job: ClaimedJob,
        academic: AcademicResearch,
        run: AcademicRun,
        pid: PaperId | None,
        query: str | None,
        pages_left: int | None,
        progress: Callable[[str, int], None],
    ) -> tuple[IngestReport | None, AcademicRun]:
        claims = self.store.run("tasks/task_claims", {"task_id": job.task_id})
        topics = [c["text"] for c in claims]
        if query is not None:
            seeds = academic.seeds_for_query(query, topics, run)
            topics = [query, *topics]
            if not seeds:
                run.warnings.append(f"the academic search found no paper for {query!r}")
        else:
            assert pid is not None
            seeds = academic.seeds_for_identifier(pid, run)
        ingest = self._ingest()

        def read(documents: Sequence[SourceDocument]) -> IngestReport:
            return ingest.ingest_documents(documents, job.task_id, progress=progress)

        report = academic.run(
            seeds,
            topics,
            pages_left,
            read,
            lambda: progress("academic", 0),
            run,
            expand=bool(job.options.get("expand_citations", True)),
        )
        return report, run

    def _query_job(self, job: ClaimedJob, pages_left: int | None, progress: Callable[[str, int], None]) -> JobOutcome:
        """The web search (when an engine is configured and the target does not turn it off), then the academic flow
        as :func:`academic_search_decision` says; the result says when and why either part was skipped. Either part
        failing to reach its sources is a warning while the other read something; with nothing read and a part
        unavailable, the job fails with both reasons."""
        query = job.value
        reports: list[IngestReport] = []
        result: dict[str, object] = {}
        identifiers: list[str] = []
        web_pages = 0
        web_report: IngestReport | None = None
        web_documents: list[SourceDocument] = []
        web_links: dict[str, tuple[Link, ...]] = {}
        web_wanted = bool(job.options.get("web_search", True))
        search = self._search() if self._search is not None and web_wanted else None
        if search is not None and search.available:
            claims = [c["text"] for c in self.store.run("tasks/task_claims", {"task_id": job.task_id})]
            ingest = self._ingest()

            def read(documents: Sequence[SourceDocument]) -> IngestReport:
                web_documents.extend(documents)
                return ingest.ingest_documents(documents, job.task_id, progress=progress)

            web_report, web_run = search.run(job.task_id, query, claims, pages_left, read, progress)
            web_links = web_run.links
            if web_report is not None:
                reports.append(web_report)
                web_pages = web_report.documents
            result["web"] = {**web_run.as_dict(), "searched": True}
            identifiers = list(web_run.identifiers)
            web_warnings = list(web_run.warnings)
        else:
            if not web_wanted:
                why = "off for this target (options.web_search = false)"
            elif search is not None and search.notes:
                why = "; ".join(search.notes)
            else:
                why = "not configured in this service"
            web_warnings = [f"no web search: {why}"]
            result["web"] = {"query": query, "engine": None, "searched": False, "reason": why, "warnings": web_warnings}
        mode: AcademicSearchMode = job.options.get("academic_search") or self.academic_search
        academic_wanted, why_academic = academic_search_decision(mode, query, web_pages)
        left = None if pages_left is None else max(pages_left - web_pages, 0)
        if academic_wanted and left != 0:
            run = AcademicRun()
            if mode == "auto" and not is_academic_query(query):
                run.warnings.append(why_academic)
            try:
                if web_pages:  # the API budget being used up is a warning when the web read pages
                    self._remaining_requests(job.task_id)
                academic_report, run = self._academic_run(job, None, query, left, progress, run)
            except (SourceUnavailable, BudgetExhausted) as exc:
                if isinstance(exc, BudgetExhausted) and not web_pages:
                    raise
                if web_pages == 0:
                    detail = "; ".join(web_warnings) or "no engine"
                    failed = SourceUnavailable(f"{exc}; and the web search read nothing ({detail})")
                    failed.job_result = {**result, "academic": run.as_dict()}
                    raise failed from None
                run.warnings.append(f"the academic part stopped: {exc}")
                academic_report = None
                asked = self._academic is not None and not isinstance(exc, BudgetExhausted)
                why_academic = f"{why_academic}; but it stopped: {exc}"
            else:
                asked = True
            if academic_report is not None:
                reports.append(academic_report)
            result["academic"] = {**run.as_dict(), "searched": asked, "reason": why_academic}
        elif academic_wanted:
            result["academic"] = skipped_academic("the web search used the task's page budget")
        else:
            result["academic"] = skipped_academic(why_academic)
        summary: dict[str, object] = report_summary(combined_report(reports)) if reports else {"documents": 0}
        summary.update(result)
        summary["identifiers"] = identifiers
        mentions: list[IdentifierMention] = []
        if web_report is not None:
            citations = self._detect_citations(web_report, web_documents, web_links, progress)
            if citations:
                summary["citations"] = citations
            mentions.extend(web_report.identifiers)
        mentions.extend(IdentifierMention(page_id=None, identifier=i, own=False) for i in identifiers)
        pages = sum(r.documents for r in reports)
        return self._with_enrichment(job, summary, mentions, pages, pages_left, progress)
