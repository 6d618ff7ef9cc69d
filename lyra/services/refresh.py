"""Living evidence: retractions applied to the graph, and a task's refresh (docs/concepts/retractions.md).

A retraction check reads, fresh, the status of every page with a DOI that a task read (Crossref's notices and the
Retraction Watch records it carries, OpenAlex's ``is_retracted``) and keeps it on the page
(cypher/retractions/set_page_status). A retracted paper's evidence stops counting: every stance edge from one of its
passages gets ``retracted: true`` and leaves its claim's stored sums in the same statement, under the claim's lock
(cypher/retractions/retract_edges); expressions of concern and corrections are shown, never counted. The check is a
recorded ``retractions`` run, so get_changes and the claim timelines list the retraction as the cause.

A refresh runs that check and queues the task's earlier targets (queries, URLs, DOIs) again as new jobs, within a
budget, under a key of their own per refresh (a target whose earlier job is done may run again); it is a recorded
``refresh`` run. The task's known web pages are not simply read again: each is asked with a conditional GET
(lyra/services/freshness.py) and only a changed one is queued to be read again; its known paper pages are re-checked
by their metadata (lyra/services/paper_freshness.py) and only one whose abstract changed is queued again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from lyra.core.ids import new_id
from lyra.graph.store import GraphStore
from lyra.graph.tasks import TaskRepository
from lyra.models.api import RetractionNotice
from lyra.models.refresh import (
    PageChecks,
    PageRetraction,
    RefreshedTarget,
    RefreshRequest,
    RefreshResult,
    RetractionCheck,
)
from lyra.services.freshness import PageRechecker
from lyra.services.jobs import JobService
from lyra.services.paper_freshness import PaperRechecker
from lyra.services.timeline import TimelineService
from lyra.sources.scholarly.papers import normalise_doi
from lyra.sources.scholarly.retractions import RetractionChecker, RetractionStatus

log = logging.getLogger(__name__)

STATE_ORDER = {"retracted": 0, "has_concern": 1, "corrected": 2, "unknown": 3, "none": 4}


def _notices(status: RetractionStatus) -> list[dict[str, Any]]:
    return [
        {"kind": n.kind, "label": n.label, "notice_doi": n.notice_doi, "date": n.date, "source": n.source}
        for n in status.notices
    ]


def page_row(page_id: str, status: RetractionStatus) -> dict[str, Any]:
    """What cypher/retractions/set_page_status writes for one page."""
    notice = status.retraction
    source: str | None = "openalex" if status.openalex_retracted else None
    if notice is not None:
        source = notice.source or "publisher"
    return {
        "page_id": page_id,
        "state": status.state,
        "notices": json.dumps(_notices(status), sort_keys=True),
        "notice_doi": notice.notice_doi if notice is not None else None,
        "source": source,
    }


class RetractionService:
    """Reads the retraction status of a task's DOI pages and applies it to the graph."""

    def __init__(
        self,
        store: GraphStore,
        tasks: TaskRepository,
        timeline: TimelineService,
        checker: Callable[[], RetractionChecker],
    ) -> None:
        self.store = store
        self.tasks = tasks
        self.timeline = timeline
        self.checker = checker  # a fresh checker per check (its own client and request budget)

    def check_task(self, task_id: str, max_pages: int = 200, *, record: bool = True) -> RetractionCheck:
        self.tasks.get(task_id)
        started = datetime.now(UTC)
        pages = self.store.run("retractions/task_doi_pages", {"task_id": task_id, "limit": max_pages})
        by_doi: dict[str, list[str]] = {}
        for page in pages:
            doi = normalise_doi(str(page["doi"]))
            if doi is None:
                log.info("task %s: page %s carries %r, not a DOI: not checked", task_id, page["page_id"], page["doi"])
                continue
            by_doi.setdefault(doi, []).append(str(page["page_id"]))
        statuses: dict[str, RetractionStatus] = {}
        if by_doi:
            with self.checker() as checker:
                statuses = checker.check(sorted(by_doi))
        rows = [
            page_row(page_id, status)
            for doi, status in statuses.items()
            if status.state != "unknown"
            for page_id in by_doi.get(doi, [])
        ]
        answers = self.store.run("retractions/set_page_status", {"rows": rows}) if rows else []
        written = {str(r["page_id"]): r for r in answers}
        retracted = self.store.run("retractions/retract_edges", {"task_id": task_id})
        edges = sum(len(r["edge_ids"]) for r in retracted)
        if edges:
            log.info("task %s: %d stance edge(s) of retracted papers stopped counting", task_id, edges)
        listed: list[PageRetraction] = []
        for doi, status in statuses.items():
            for page_id in by_doi.get(doi, []):
                out = written.get(page_id, {})
                listed.append(
                    PageRetraction(
                        source_id=page_id,
                        doi=doi,
                        state=out.get("state") or status.state,
                        newly_retracted=bool(out.get("newly")),
                        retracted_at=out.get("retracted_at"),
                        notices=[
                            RetractionNotice(kind=n.kind, notice_doi=n.notice_doi, date=n.date, source=n.source)
                            for n in status.notices
                        ],
                        errors=list(status.errors),
                    )
                )
        listed.sort(key=lambda p: (STATE_ORDER.get(p.state, 9), p.doi, p.source_id))
        run_id, moved = self.timeline.record_run(task_id, "retractions", None, started) if record else (None, 0)
        return RetractionCheck(
            task_id=task_id,
            run_id=run_id or None,
            pages_checked=len(listed),
            pages=listed,
            edges_retracted=edges,
            claims_moved=moved,
        )


class RefreshService:
    def __init__(
        self,
        store: GraphStore,
        jobs: JobService,
        retractions: RetractionService,
        timeline: TimelineService,
        pages: PageRechecker | None = None,
        papers: PaperRechecker | None = None,
    ) -> None:
        self.store = store
        self.jobs = jobs
        self.retractions = retractions
        self.timeline = timeline
        self.pages = pages  # None: no web fetcher in this service, known pages are not re-checked
        self.papers = papers  # None: paper pages are not re-checked by their metadata

    def refresh(self, request: RefreshRequest) -> RefreshResult:
        started = datetime.now(UTC)
        refresh_id = new_id("rfr")
        check = self.retractions.check_task(request.task_id, request.max_pages)
        pages = self.recheck_pages(request.task_id, refresh_id, request.max_rechecks)
        papers = self.papers.recheck(request.task_id, refresh_id, request.max_rechecks) if self.papers else None
        rechecked = frozenset(p.url for p in pages.pages) if pages is not None else frozenset()
        targets = self.jobs.requeue_targets(request.task_id, refresh_id, request.max_targets, rechecked)
        listed = [RefreshedTarget.model_validate(t) for t in targets]
        queued = sum(1 for t in listed if t.status == "queued")
        run_id, _ = self.timeline.record_run(request.task_id, "refresh", refresh_id, started)
        self.record_page_checks(request.task_id, run_id, pages)
        if papers is not None and run_id:
            counts = {"checked": papers.checked, "unchanged": papers.unchanged, "changed": papers.changed}
            counts["failed"] = papers.failed
            self.store.run("freshness/set_run_papers", {"task_id": request.task_id, "run_id": run_id, "counts": counts})
        log.info("task %s: refresh %s queued %d target(s)", request.task_id, refresh_id, queued)
        return RefreshResult(
            task_id=request.task_id,
            refresh_id=refresh_id,
            run_id=run_id or None,
            queued=queued,
            targets=listed,
            retractions=check,
            pages=pages,
            papers=papers,
        )

    def recheck_pages(self, task_id: str, refresh_id: str, max_rechecks: int) -> PageChecks | None:
        """The task's known web pages asked whether they changed (conditional GET); None without a fetcher."""
        if self.pages is None:
            return None
        return self.pages.recheck(task_id, refresh_id, max_rechecks)

    def record_page_checks(self, task_id: str, run_id: str | None, pages: PageChecks | None) -> None:
        """The re-check's counts kept on the refresh's run."""
        if pages is None or not run_id:
            return
        counts = {"checked": pages.checked, "unchanged": pages.unchanged, "changed": pages.changed}
        counts["failed"] = pages.failed
        self.store.run("freshness/set_run_pages", {"task_id": task_id, "run_id": run_id, "counts": counts})
