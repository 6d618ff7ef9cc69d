"""What a research job does: read its target into the task's evidence graph within the task's budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from lyra.core.errors import BudgetExhausted, SourceUnavailable
from lyra.graph.store import GraphStore
from lyra.models.api import Budget
from lyra.models.ingest import IngestReport
from lyra.services.academic import AcademicResearch, AcademicRun, is_academic_query
from lyra.services.ingest import IngestService
from lyra.services.jobs import ClaimedJob, JobContext, JobOutcome, Park, resolve_file_target
from lyra.services.status import academic_usage
from lyra.sources.domain_patterns import normalise_domain
from lyra.sources.local_files import SourceDocument
from lyra.sources.scholarly import PaperId, find_identifiers, parse_identifier

if TYPE_CHECKING:
    from lyra.services.interventions import InterventionService
    from lyra.sources.web import WebFetcher

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


class ResearchExecutor:
    """Runs one job. ``file`` targets go through the ingest pipeline; ``doi`` targets, paper URLs (doi.org,
    Semantic Scholar, OpenAlex, arXiv, PubMed) and ``query`` targets go through the academic flow (search, citation
    expansion, abstract pages) into the same ingest path; other ``url`` targets through the web fetcher (SSRF guard,
    domain gate, robots.txt, politeness, HTML and PDF extraction) into the same ingest path."""

    def __init__(
        self,
        store: GraphStore,
        ingest: Callable[[], IngestService],
        allowed_roots: Sequence[Path],
        academic: Callable[[int | None], AcademicResearch] | None = None,
        max_api_requests: int | None = None,
        web: Callable[[], WebFetcher] | None = None,
        interventions: InterventionService | None = None,
    ) -> None:
        self.store = store
        self._ingest = ingest
        self.allowed_roots = list(allowed_roots)
        self._academic = academic  # built per job with the task's remaining API request budget
        self.max_api_requests = max_api_requests
        self._web = web  # the process's one fetcher (its politeness state is shared by every worker)
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
            return JobOutcome(result=report_summary(report), pages=report.documents)
        if job.kind == "doi":
            return self._academic_job(job, PaperId("doi", job.value), None, pages_left, progress)
        if job.kind == "url":
            pid = paper_identifier(job.value)
            if pid is None:
                return self._web_job(job, progress)
            return self._academic_job(job, pid, None, pages_left, progress)
        return self._academic_job(job, None, job.value, pages_left, progress)

    def _web_job(self, job: ClaimedJob, progress: Callable[[str, int], None]) -> JobOutcome:
        """A web page or PDF: fetched through the one guarded, polite fetcher, then the ingest path. A refusal
        (SSRF guard, blocked domain, robots.txt, limits, type) fails the job with its code and reason. A CAPTCHA,
        login or consent wall parks the job for a person (an intervention item; the domain is paused for the task);
        a job whose domain is paused for its task waits without fetching; cookies a person gave are sent."""
        if self._web is None:
            raise SourceUnavailable("source not available: web fetching is not configured in this service")
        domain = web_domain(job.value)
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
        result: dict[str, object] = report_summary(report)
        result["fetch"] = fetch
        found = find_identifiers(f"{outcome.document.doi or ''}\n{outcome.document.text}")
        result["identifiers"] = [f"{p.kind}:{p.value}" for p in found[:MAX_SKIPPED_IN_RESULT]]
        return JobOutcome(result=result, pages=report.documents)

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
        if self._academic is None:
            raise SourceUnavailable("source not available: the academic sources are not configured in this service")
        with self._academic(self._remaining_requests(job.task_id)) as academic:
            claims = self.store.run("tasks/task_claims", {"task_id": job.task_id})
            topics = [c["text"] for c in claims]
            run = AcademicRun()
            if query is not None:
                if not is_academic_query(query):
                    run.warnings.append(
                        "the query does not look academic (is_academic_query false) and this build has no web search "
                        "yet: searched the academic APIs anyway"
                    )
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
            result: dict[str, object] = report_summary(report) if report is not None else {"documents": 0}
            result["academic"] = run.as_dict()
            return JobOutcome(result=result, pages=report.documents if report is not None else 0)
