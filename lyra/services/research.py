"""What a research job does: read its target into the task's evidence graph within the task's budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from lyra.core.errors import BudgetExhausted, SourceUnavailable
from lyra.graph.store import GraphStore
from lyra.models.api import Budget
from lyra.models.ingest import IngestReport
from lyra.services.ingest import IngestService
from lyra.services.jobs import ClaimedJob, JobContext, JobOutcome, resolve_file_target

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


class ResearchExecutor:
    """Runs one job. ``file`` targets go through the ingest pipeline; ``query``, ``url`` and ``doi`` need the
    web and academic sources, which this build does not have yet: those jobs fail with a clear error."""

    def __init__(self, store: GraphStore, ingest: Callable[[], IngestService], allowed_roots: Sequence[Path]) -> None:
        self.store = store
        self._ingest = ingest
        self.allowed_roots = list(allowed_roots)

    def __call__(self, job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        row = self.store.run("jobs/task_budget", {"task_id": job.task_id})[0]
        budget = Budget.of(row["max_pages"], row["pages_used"], row["max_seconds"], row["seconds_used"])
        pages_left, seconds_left = budget.pages_remaining, budget.seconds_remaining
        if pages_left == 0:
            raise BudgetExhausted(f"task {job.task_id!r} used its page budget ({budget.max_pages} pages)")
        if seconds_left == 0:
            raise BudgetExhausted(f"task {job.task_id!r} used its time budget ({budget.max_seconds} s)")
        if job.kind != "file":
            raise SourceUnavailable(
                f"source not available: {job.kind!r} targets need the web and academic sources, which this "
                "Lyra build does not include yet; nothing was fetched",
            )
        path = resolve_file_target(job.value, self.allowed_roots, "value")
        ctx.check()

        def progress(_counter: str, _n: int) -> None:
            ctx.check()
            if seconds_left is not None and ctx.elapsed > seconds_left:
                raise BudgetExhausted(
                    f"task {job.task_id!r} ran out of its time budget ({budget.max_seconds} s) during this job; "
                    "queue the target again after raising the budget to finish it"
                )

        report = self._ingest().ingest(
            [path],
            job.task_id,
            extract_claims=bool(job.options.get("extract_claims", False)),
            progress=progress,
            max_documents=pages_left,
            allowed_roots=self.allowed_roots,
        )
        return JobOutcome(result=report_summary(report), pages=report.documents)
