"""Known pages re-checked only when their source says they changed (docs/concepts/living-evidence.md).

A fetched page keeps what its source said (cypher/freshness/set_page_validators): its ETag, Last-Modified and the
sha256 of its body. A refresh asks each known web page of the task again with a conditional GET through the one
guarded, polite fetcher (its SSRF guard, domain gate, robots.txt, daily budget and per-domain rate): a 304 reads
nothing, a 2xx with the same hash is unchanged, a changed page gets ``changed_at`` and is queued to be read again
through the ingest path (a ``url`` job of the refresh). After a page is read again, its passages no longer in the
new version stop counting and those back in it count again (:func:`supersede_passages`, decision record 0016).
Every read of a page goes through :func:`compare_versions` (the ingest path calls it), whatever read it: a ``url``
job, a paper's abstract read again, a web search result, a local file imported again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from lyra.graph.store import GraphStore
from lyra.models.ingest import PassagesMoved
from lyra.models.refresh import PageCheck, PageCheckResult, PageChecks, PaperCheck, PaperChecks
from lyra.services.jobs import JobService

if TYPE_CHECKING:  # the fetcher's module loads the extractors: imported where a fetcher is built
    from lyra.sources.web import Revalidation, WebFetcher

log = logging.getLogger(__name__)


class Validated(Protocol):
    """A fetch's validators (:class:`~lyra.sources.web.FetchOutcome` fits)."""

    @property
    def etag(self) -> str | None: ...

    @property
    def last_modified(self) -> str | None: ...

    @property
    def content_hash(self) -> str | None: ...


def remember_validators(store: GraphStore, page_ids: Mapping[str, str], fetched: Mapping[str, Validated]) -> int:
    """Keep, on each page read (``page_ids``: document URL -> page id), what its fetch said: ETag, Last-Modified,
    content hash. ``fetched``: document URL -> the fetch outcome. Returns the pages written."""
    rows = [
        {
            "page_id": page_ids[url],
            "etag": outcome.etag,
            "last_modified": outcome.last_modified,
            "content_hash": outcome.content_hash,
            "changed": False,
        }
        for url, outcome in fetched.items()
        if url in page_ids and outcome.content_hash is not None
    ]
    if not rows:
        return 0
    return len(store.run("freshness/set_page_validators", {"rows": rows}))


_SPACE = re.compile(r"\s+")


def normalized(text: str) -> str:
    """Text compared across versions of a page: whitespace runs as one space, case folded."""
    return _SPACE.sub(" ", text).strip().casefold()


@dataclass(frozen=True)
class PassageChanges:
    """What a page's new version did to its passages: fragments that left it, fragments back on it, and the claims'
    edges that stopped counting or count again."""

    gone: int = 0
    back: int = 0
    edges_superseded: int = 0
    edges_restored: int = 0
    claims: int = 0


def supersede_passages(store: GraphStore, page_id: str, text: str, current: Sequence[str]) -> PassageChanges:
    """After page ``page_id`` was read again (its extracted ``text``; ``current``: the fragments that read found
    on it, near-duplicates linked included): each fragment of the page that is neither among ``current`` nor, as
    normalized text, inside the new text has left the page; each superseded one that is back counts again. The
    claims' edges follow, with their stored sums, in one statement (cypher/freshness/supersede_passages)."""
    body = normalized(text)
    kept = set(current)
    gone: list[str] = []
    back: list[str] = []
    for row in store.run("freshness/page_passages", {"page_id": page_id}):
        present = row["fragment_id"] in kept or normalized(row["text"] or "") in body
        if not present and not row["superseded"]:
            gone.append(row["fragment_id"])
        elif present and row["superseded"]:
            back.append(row["fragment_id"])
    if not gone and not back:
        return PassageChanges()
    rows = store.run("freshness/supersede_passages", {"page_id": page_id, "gone_ids": gone, "back_ids": back})
    changes = PassageChanges(
        gone=len(gone),
        back=len(back),
        edges_superseded=sum(len(r["superseded"]) for r in rows),
        edges_restored=sum(len(r["restored"]) for r in rows),
        claims=len(rows),
    )
    log.info("page %s read again: %s", page_id, changes)
    return changes


def compare_versions(store: GraphStore, texts: Mapping[str, str], found: Mapping[str, Sequence[str]]) -> PassagesMoved:
    """The one comparison of a read's pages with what they carried before (decision record 0016), called by the
    ingest path for every page it read, whichever path read it. ``texts``: page id -> the text just read (a web
    page's extracted text, a paper's abstract, a local file's text); ``found``: page id -> the fragments the read
    found on it. A page read for the first time carries only what was just found: nothing moves."""
    total = PassagesMoved()
    for page_id, text in texts.items():
        moved = supersede_passages(store, page_id, text, found.get(page_id, []))
        total.add(
            PassagesMoved(
                superseded=moved.gone,
                restored=moved.back,
                edges_superseded=moved.edges_superseded,
                edges_restored=moved.edges_restored,
            )
        )
    return total


def _result(check: Revalidation, had_hash: bool) -> PageCheckResult:
    if check.code == "changed" and not had_hash:
        return "first_check"
    return check.code


class PageRechecker:
    """Asks a task's known web pages whether they changed; queues the changed ones to be read again."""

    def __init__(self, store: GraphStore, jobs: JobService, web: Callable[[], WebFetcher]) -> None:
        self.store = store
        self.jobs = jobs
        self.web = web

    def recheck(self, task_id: str, refresh_id: str, max_pages: int) -> PageChecks:
        pages = self.store.run("freshness/task_known_pages", {"task_id": task_id, "limit": max_pages})
        if not pages:
            return _summary([])
        fetcher = self.web()
        listed: list[PageCheck] = []
        rows: list[dict[str, Any]] = []
        for page in pages:
            had_hash = page["content_hash"] is not None
            check = fetcher.revalidate(
                str(page["url"]),
                etag=page["etag"],
                last_modified=page["last_modified"],
                known_hash=page["content_hash"],
            )
            result = _result(check, had_hash)
            listed.append(
                PageCheck(
                    source_id=str(page["page_id"]),
                    url=str(page["url"]),
                    result=result,
                    status=check.status,
                    reason=check.reason,
                    failure=check.failure,
                )
            )
            if result != "failed":
                rows.append(
                    {
                        "page_id": page["page_id"],
                        "etag": check.etag,
                        "last_modified": check.last_modified,
                        "content_hash": check.content_hash,
                        "changed": result == "changed",
                    }
                )
        if rows:
            self.store.run("freshness/set_page_validators", {"rows": rows})
        requeue_changed(self.jobs, task_id, refresh_id, listed)
        summary = _summary(listed)
        log_checks("page(s)", task_id, refresh_id, summary)
        return summary


def requeue_changed(
    jobs: JobService, task_id: str, refresh_id: str, listed: Sequence[PageCheck] | Sequence[PaperCheck]
) -> None:
    """Queue a re-read of each checked page or paper whose source changed, and note its job on it."""
    queued = jobs.queue_rereads(task_id, refresh_id, [c.url for c in listed if c.result == "changed"])
    for checked in listed:
        checked.job_id = queued.get(checked.url) if checked.result == "changed" else None


def log_checks(what: str, task_id: str, refresh_id: str, summary: PageChecks | PaperChecks) -> None:
    log.info(
        "task %s: refresh %s re-checked %d %s: %d unchanged, %d changed, %d failed",
        task_id,
        refresh_id,
        summary.checked,
        what,
        summary.unchanged,
        summary.changed,
        summary.failed,
    )


def _summary(listed: list[PageCheck]) -> PageChecks:
    def count(result: PageCheckResult) -> int:
        return sum(1 for p in listed if p.result == result)

    return PageChecks(
        checked=len(listed),
        unchanged=count("not_modified") + count("same_hash"),
        not_modified=count("not_modified"),
        same_hash=count("same_hash"),
        changed=count("changed"),
        first_check=count("first_check"),
        failed=count("failed"),
        requeued=sum(1 for p in listed if p.job_id is not None),
        pages=listed,
    )
