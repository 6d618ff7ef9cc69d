"""Claim confidence for a task: alpha/beta aggregated in Neo4j, statistics derived from them."""

from __future__ import annotations

from lyra.core.ids import validate_task_id
from lyra.graph.store import GraphStore
from lyra.graph.tasks import TaskRepository
from lyra.models.confidence import ClaimConfidence, Posterior, beta_stats


class MaterialsService:
    def __init__(self, store: GraphStore, tasks: TaskRepository) -> None:
        self.store = store
        self.tasks = tasks

    def claim_confidences(self, task_id: str) -> list[ClaimConfidence]:
        """Every claim of the task with confidence, uncertainty, controversy, alpha, beta, evidence_count.

        Computed on demand from the stance edges now in the graph (never from stored numbers).
        """
        validate_task_id(task_id)
        self.tasks.get(task_id)  # NotFoundError for an unknown task
        out: list[ClaimConfidence] = []
        for row in self.store.run("confidence/claim_alpha_beta", {"task_id": task_id}):
            posterior = Posterior(
                alpha=row["alpha"],
                beta=row["beta"],
                supports_count=row["supports_count"],
                refutes_count=row["refutes_count"],
                neutral_count=row["neutral_count"],
            )
            stats = beta_stats(posterior)
            out.append(
                ClaimConfidence(
                    claim_id=row["claim_id"],
                    text=row["text"],
                    claim_adoption_status=row["claim_adoption_status"] or "adopted",
                    supports_count=row["supports_count"],
                    refutes_count=row["refutes_count"],
                    neutral_count=row["neutral_count"],
                    **stats.model_dump(),
                )
            )
        return out
