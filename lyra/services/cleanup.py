"""Task clean-up per ADR-0005, run as batched Cypher inside Neo4j.

* ``soft``: the task's claims, their stance edges and the Task node. Pages and fragments stay
  (they are global and may serve other tasks).
* ``hard`` (orphans_only): soft, then claims no task holds any more, and, among the fragments and
  pages this task reached, those that nothing else uses: fragments without any stance edge, CITES
  edges whose two pages both hold no fragment, and pages with no fragment and no CITES edge.
  Anything another task still reaches keeps a stance edge (or a fragment) and is therefore kept.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from lyra.core.ids import validate_task_id
from lyra.graph.store import GraphStore
from lyra.graph.tasks import TaskRepository

CleanupMode = Literal["soft", "hard"]


class GraphCounts(BaseModel):
    tasks: int
    claims: int
    fragments: int
    pages: int
    stance_edges: int
    citations: int


class CleanupReport(BaseModel):
    task_id: str
    mode: CleanupMode
    before: GraphCounts
    after: GraphCounts
    removed: GraphCounts


class CleanupService:
    def __init__(self, store: GraphStore, tasks: TaskRepository, batch_size: int = 10_000) -> None:
        self.store = store
        self.tasks = tasks
        self.batch_size = batch_size

    def counts(self) -> GraphCounts:
        return GraphCounts(**self.store.run("cleanup/count_graph")[0])

    def cleanup(self, task_id: str, mode: CleanupMode) -> CleanupReport:
        validate_task_id(task_id)
        self.tasks.get(task_id)  # NotFoundError before anything is touched
        before = self.counts()
        reach = self.store.run("cleanup/task_reach", {"task_id": task_id})[0]
        batch = {"batch_size": self.batch_size}
        self.store.run("cleanup/delete_task_claims", {"task_id": task_id, **batch})
        self.store.run("cleanup/delete_task_node", {"task_id": task_id})
        if mode == "hard":
            self.store.run("cleanup/delete_orphan_claims", batch)
            self.store.run("cleanup/delete_orphan_fragments", {"fragment_ids": reach["fragment_ids"], **batch})
            self.store.run("cleanup/delete_orphan_citations", {"page_ids": reach["page_ids"], **batch})
            self.store.run("cleanup/delete_orphan_pages", {"page_ids": reach["page_ids"], **batch})
        after = self.counts()
        removed = GraphCounts(**{k: getattr(before, k) - getattr(after, k) for k in GraphCounts.model_fields})
        return CleanupReport(task_id=task_id, mode=mode, before=before, after=after, removed=removed)
