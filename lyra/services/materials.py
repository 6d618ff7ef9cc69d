"""Claim confidence for a task: alpha/beta aggregated in Neo4j, statistics derived from them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from lyra.core.ids import validate_task_id
from lyra.graph.store import GraphStore
from lyra.graph.tasks import TaskRepository
from lyra.models.api import Evidence, EvidenceYears, GetMaterialsRequest, MaterialClaim, Materials
from lyra.models.confidence import ClaimConfidence, Posterior, beta_stats, credible_intervals


def verification(supporting_pages: int, refutes: int, security_rejections: int) -> dict[str, Any]:
    """Source verification from evidence only (seed 003 decision 10: reason codes state facts; domain categories
    play no part): a dangerous pattern rejects; refuting evidence keeps a claim pending (never a block); two or
    more independent supporting pages without refutation verify; less is insufficient."""
    if security_rejections:
        status, reason = "rejected", "dangerous_pattern"
    elif refutes:
        status, reason = "pending", "conflicting_evidence"
    elif supporting_pages >= 2:
        status, reason = "verified", "well_supported"
    else:
        status, reason = "pending", "insufficient_evidence"
    return {
        "source_verification_status": status,
        "verification_reason": reason,
        "independent_sources": supporting_pages,
    }


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

    def materials(self, request: GetMaterialsRequest) -> Materials:
        """The seeds' materials export (decisions 13-15), computed now from the edges by one Cypher aggregation."""
        task = self.tasks.get(request.task_id)
        opts = request.options
        rows = self.store.run(
            "materials/task_materials",
            {
                "task_id": request.task_id,
                "evidence_limit": opts.evidence_limit,
                "include_neutral": opts.include_neutral,
                "include_not_adopted": opts.include_not_adopted,
            },
        )
        intervals = credible_intervals([r["alpha"] for r in rows], [r["beta"] for r in rows])
        claims: list[MaterialClaim] = []
        for row, interval in zip(rows, intervals, strict=True):
            stats = beta_stats(
                Posterior(row["alpha"], row["beta"], row["supports_count"], row["refutes_count"], row["neutral_count"])
            )
            claims.append(
                MaterialClaim(
                    claim_id=row["claim_id"],
                    text=row["text"],
                    **stats.model_dump(),
                    supports_count=row["supports_count"],
                    refutes_count=row["refutes_count"],
                    neutral_count=row["neutral_count"],
                    claim_adoption_status=row["claim_adoption_status"],
                    claim_rejection_reason=row["claim_rejection_reason"],
                    credible_interval_95=interval,
                    **verification(row["supporting_pages"], row["refutes_count"], row["security_rejections"]),
                    evidence=[Evidence.model_validate(e) for e in row["evidence"]],
                    evidence_truncated=row["evidence_available"] > len(row["evidence"]),
                    evidence_years=EvidenceYears(oldest=row["oldest"], newest=row["newest"]),
                )
            )
        return Materials(
            task_id=task["id"],
            hypothesis=task["hypothesis"],
            status=task["status"],
            claims=claims,
            computed_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
