"""Known paper pages re-checked by their metadata (docs/concepts/living-evidence.md).

A paper's abstract page (``page_type = academic_abstract``) keeps, when it is read, what its metadata said
(cypher/freshness/set_paper_versions): the sha256 of its abstract (case and spacing ignored, so the same abstract
from either API hashes alike) and the record's version, OpenAlex's ``updated_date``. Semantic Scholar's Graph API
states no version or modification date for a paper, so for it the abstract's hash is the only change marker.

A refresh asks each known paper page of the task again, least recently checked first, through the resolver a
``doi`` target uses (Semantic Scholar, then OpenAlex's free singleton lookup), with the response cache bypassed and
the per-API rate limits and a request budget kept. Another abstract is a change: the page gets ``changed_at`` and is
queued to be read again through the academic job path (a ``url`` job of the refresh naming the paper's address).
A moved version with the same abstract is shown and re-reads nothing; another abstract while one API did not answer
is not judged (the other API's wording of the same abstract may differ), so it fails with its reason.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lyra.core.errors import LyraError
from lyra.graph.store import GraphStore
from lyra.models.refresh import PaperCheck, PaperCheckResult, PaperChecks
from lyra.services.freshness import log_checks, requeue_changed
from lyra.services.jobs import JobService
from lyra.sources.scholarly.papers import Paper, parse_identifier

if TYPE_CHECKING:
    from lyra.sources.scholarly.provider import ScholarlySources

log = logging.getLogger(__name__)


def abstract_hash(abstract: str | None) -> str | None:
    """The sha256 of an abstract, case and spacing ignored (OpenAlex's rebuilt abstract and Semantic Scholar's
    differ in spacing only); None without an abstract."""
    if abstract is None or not abstract.strip():
        return None
    return hashlib.sha256(" ".join(abstract.casefold().split()).encode("utf-8")).hexdigest()


def remember_paper_versions(store: GraphStore, page_ids: Mapping[str, str], papers: Mapping[str, Paper]) -> int:
    """Keep, on each paper page read (``page_ids``: document URL -> page id; ``papers``: document URL -> the paper
    read), its abstract's hash and its record's version. Returns the pages written."""
    rows = [
        {
            "page_id": page_ids[url],
            "paper_hash": abstract_hash(paper.abstract),
            "paper_version": paper.updated,
            "changed": False,
        }
        for url, paper in papers.items()
        if url in page_ids and abstract_hash(paper.abstract) is not None
    ]
    if not rows:
        return 0
    return len(store.run("freshness/set_paper_versions", {"rows": rows}))


def _compare(page: Mapping[str, Any], paper: Paper, warnings: Sequence[str]) -> tuple[PaperCheckResult, str]:
    new_hash = abstract_hash(paper.abstract)
    if new_hash is None:
        return "failed", "the sources answer without an abstract now: nothing to compare"
    if page["paper_hash"] is None:
        return "first_check", "no abstract hash was kept when it was read: kept now"
    if new_hash != page["paper_hash"] and warnings:
        # the abstract read came from the API that answered first; from the other one alone it may differ in
        # wording without a revision, so a partial answer never re-reads a paper
        return "failed", f"another abstract, but not every source answered ({'; '.join(warnings)[:300]}): not judged"
    if new_hash != page["paper_hash"]:
        return "changed", "the abstract changed"
    if paper.updated is not None and page["paper_version"] is not None and paper.updated != page["paper_version"]:
        return "new_version", f"the record's version moved ({page['paper_version']} -> {paper.updated}); same abstract"
    return "unchanged", "the same abstract"


class PaperRechecker:
    """Asks a task's known paper pages whether their abstract changed; queues the changed ones to be read again."""

    def __init__(self, store: GraphStore, jobs: JobService, sources: Callable[[int], ScholarlySources] | None) -> None:
        self.store = store
        self.jobs = jobs
        self.sources = sources  # max requests -> fresh clients without the response cache; None: not configured

    def recheck(self, task_id: str, refresh_id: str, max_papers: int) -> PaperChecks | None:
        if self.sources is None:
            return None
        pages = self.store.run("freshness/task_paper_pages", {"task_id": task_id, "limit": max_papers})
        if not pages:
            return _summary([])
        listed: list[PaperCheck] = []
        rows: list[dict[str, Any]] = []
        with self.sources(4 * len(pages)) as sources:  # S2, then OpenAlex, each with a retry at most
            for page in pages:
                url = str(page["url"])
                check = PaperCheck(source_id=str(page["page_id"]), url=url, result="failed", reason="")
                listed.append(check)
                pid = parse_identifier(str(page["doi"] or "")) or parse_identifier(url)
                if pid is None:
                    check.reason = "no paper identifier in the page's DOI or address"
                    continue
                try:
                    found = sources.resolve(pid)
                except LyraError as exc:
                    check.reason = f"no source answered: {exc}"
                    log.warning("task %s: paper re-check of %s: %s", task_id, pid, exc)
                    continue
                if found.value is None:
                    check.reason = "no source knows the paper now"
                    continue
                check.result, check.reason = _compare(page, found.value, found.warnings)
                check.version = found.value.updated
                if check.result != "failed":
                    rows.append(
                        {
                            "page_id": check.source_id,
                            "paper_hash": abstract_hash(found.value.abstract),
                            "paper_version": found.value.updated,
                            "changed": check.result == "changed",
                        }
                    )
        if rows:
            self.store.run("freshness/set_paper_versions", {"rows": rows})
        requeue_changed(self.jobs, task_id, refresh_id, listed)
        summary = _summary(listed)
        log_checks("paper(s)", task_id, refresh_id, summary)
        return summary


def _summary(listed: list[PaperCheck]) -> PaperChecks:
    def count(result: PaperCheckResult) -> int:
        return sum(1 for p in listed if p.result == result)

    return PaperChecks(
        checked=len(listed),
        unchanged=count("unchanged") + count("new_version"),
        new_version=count("new_version"),
        changed=count("changed"),
        first_check=count("first_check"),
        failed=count("failed"),
        requeued=sum(1 for p in listed if p.job_id is not None),
        papers=listed,
    )
