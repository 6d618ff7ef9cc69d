"""Task clean-up per decision record 0002, and a graph-wide garbage collection, run as batched Cypher inside Neo4j.

* ``soft``: the task's claims, their stance edges, its Job nodes, its Intervention items (and the cookies a person
  gave for it) and the Task node. Pages and fragments stay
  (they are global and may serve other tasks).
* ``hard`` (orphans_only): soft, then claims no task holds any more, and, among the fragments and
  pages this task reached, those that nothing else uses: fragments without any stance edge, CITES
  edges whose two pages both hold no fragment, and pages with no fragment and no CITES edge.
  Anything another task still reaches keeps a stance edge (or a fragment) and is therefore kept.
* :meth:`CleanupService.collect_garbage`: what soft clean-ups leave behind, graph-wide. A page is *in use* when
  one of its fragments has a stance edge to a claim a Task holds. Removed, in this order: claims no Task holds
  (with their stance edges); fragments with no stance edge left that are on no page in use (so a document a task
  uses keeps every passage, judged or not); CITES edges whose two pages both hold no fragment; pages with no
  fragment and no CITES edge; Job nodes and Intervention items no Task holds. Domains, override rules and every
  audit node (FeedbackEvent, DomainOverrideEvent, NLICorrection, SecurityFinding, Calibrator, CalibrationEvaluation) are
  never touched.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel

from lyra.core.errors import ConflictError
from lyra.core.ids import validate_task_id
from lyra.graph.store import GraphStore
from lyra.graph.tasks import TaskRepository
from lyra.models.api import GarbageCounts, GarbageReport

CleanupMode = Literal["soft", "hard"]


class GraphCounts(BaseModel):
    tasks: int
    claims: int
    fragments: int
    pages: int
    stance_edges: int
    citations: int
    jobs: int
    interventions: int = 0


class CleanupReport(BaseModel):
    task_id: str
    mode: CleanupMode
    before: GraphCounts
    after: GraphCounts
    removed: GraphCounts


class CleanupService:
    def __init__(
        self,
        store: GraphStore,
        tasks: TaskRepository,
        batch_size: int = 10_000,
        forget_secrets: Callable[[str], int] | None = None,
    ) -> None:
        self.store = store
        self.tasks = tasks
        self.batch_size = batch_size
        self.forget_secrets = forget_secrets  # a task's cookies (lyra.services.interventions.CookieStore) go with it

    def counts(self) -> GraphCounts:
        return GraphCounts(**self.store.run("cleanup/count_graph")[0])

    def cleanup(self, task_id: str, mode: CleanupMode) -> CleanupReport:
        validate_task_id(task_id)
        self.tasks.ensure_exists(task_id)  # NotFoundError before anything is touched (even for an unreadable task)
        before = self.counts()
        reach = self.store.run("cleanup/task_reach", {"task_id": task_id})[0]
        batch = {"batch_size": self.batch_size}
        self.store.run("cleanup/delete_task_claim_links", {"task_id": task_id, **batch})
        self.store.run("cleanup/delete_task_claims", {"task_id": task_id, **batch})
        self.store.run("cleanup/delete_task_jobs", {"task_id": task_id, **batch})
        self.store.run("cleanup/delete_task_pair_leases", {"task_id": task_id})
        self.store.run("cleanup/delete_task_judging", {"task_id": task_id})
        self.store.run("cleanup/delete_task_interventions", {"task_id": task_id, **batch})
        self.store.run("cleanup/delete_task_timeline", {"task_id": task_id, **batch})
        self.store.run("cleanup/delete_task_node", {"task_id": task_id})
        if self.forget_secrets is not None:
            self.forget_secrets(task_id)
        if mode == "hard":
            self.store.run("cleanup/delete_orphan_claims", batch)
            self.store.run("cleanup/delete_orphan_fragments", {"fragment_ids": reach["fragment_ids"], **batch})
            self.store.run("cleanup/delete_orphan_citations", {"page_ids": reach["page_ids"], **batch})
            self.store.run("cleanup/delete_orphan_pages", {"page_ids": reach["page_ids"], **batch})
        after = self.counts()
        removed = GraphCounts(**{k: getattr(before, k) - getattr(after, k) for k in GraphCounts.model_fields})
        return CleanupReport(task_id=task_id, mode=mode, before=before, after=after, removed=removed)

    def collect_garbage(self, dry_run: bool) -> GarbageReport:
        """Count the garbage (always first); unless ``dry_run``, remove it and report what each step removed.

        Refuses to remove anything while a job is running: a job writes its pages and fragments before the stance
        edges that make them used, so it would lose evidence mid-way.
        """
        before = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()  # today and yesterday (UTC) stay
        counted = self.store.run("cleanup/count_garbage", {"before": before})[0]
        found = GarbageCounts(**{k: counted[k] for k in GarbageCounts.model_fields})
        if dry_run:
            return GarbageReport(
                dry_run=True, found=found, removed=GarbageCounts(**dict.fromkeys(GarbageCounts.model_fields, 0))
            )
        running = int(counted["running_jobs"])
        if running:
            raise ConflictError(
                f"garbage collection cannot run while {running} job(s) are running: it would remove the pages "
                "and fragments they are writing",
                hint="wait until get_status shows no running job, or stop the tasks first; a dry run is allowed",
            )
        batch = {"batch_size": self.batch_size}
        claims = self.store.run("cleanup/delete_orphan_claims", batch)[0]
        fragments = self.store.run("cleanup/sweep_unused_fragments", batch)[0]
        citations = self.store.run("cleanup/sweep_orphan_citations", batch)[0]
        pages = self.store.run("cleanup/sweep_unused_pages", batch)[0]
        jobs = self.store.run("cleanup/delete_orphan_jobs", batch)[0]
        interventions = self.store.run("cleanup/delete_orphan_interventions", batch)[0]
        domain_days = self.store.run("cleanup/delete_old_domain_days", {"before": before, **batch})[0]
        removed = GarbageCounts(
            claims=claims["claims"],
            stance_edges=claims["stance_edges"] + fragments["stance_edges"],
            fragments=fragments["fragments"],
            citations=citations["citations"],
            pages=pages["pages"],
            jobs=jobs["jobs"],
            interventions=interventions["interventions"],
            domain_days=domain_days["domain_days"],
        )
        return GarbageReport(dry_run=False, found=found, removed=removed)
