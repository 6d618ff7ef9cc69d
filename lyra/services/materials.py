"""Claim confidence for a task: alpha/beta aggregated in Neo4j, statistics derived from them.

`cypher/materials/task_materials.cypher` is the only Cypher that aggregates a claim's stance edges: every
reader of confidence (MCP/REST `get_materials`, the CLI, the benchmark) goes through
:meth:`MaterialsService.materials`. Scores without evidence lists: ``MaterialsOptions(evidence_limit=0)``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from lyra.graph.store import GraphStore
from lyra.graph.tasks import TaskRepository
from lyra.models.api import GetMaterialsRequest, Materials
from lyra.models.confidence import Posterior, beta_stats, credible_intervals

CLAIMS_PER_PART = 250


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
    def __init__(self, store: GraphStore, tasks: TaskRepository, parallel_queries: int = 3) -> None:
        self.store = store
        self.tasks = tasks
        self.parallel_queries = parallel_queries
        self._pool = ThreadPoolExecutor(max_workers=max(1, parallel_queries), thread_name_prefix="lyra-materials")

    def _rows(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        """A large task's claims are split into a few contiguous parts aggregated in parallel read transactions
        (Neo4j runs each on its own core); the parts come back in claim order."""
        if self.parallel_queries <= 1:
            return self.store.run("materials/task_materials", params)
        ids = [r["claim_id"] for r in self.store.run("tasks/task_claims", {"task_id": params["task_id"]})]
        parts = min(self.parallel_queries, -(-len(ids) // CLAIMS_PER_PART))
        if parts <= 1:
            return self.store.run("materials/task_materials", params)
        size = -(-len(ids) // parts)
        chunks = [ids[i : i + size] for i in range(0, len(ids), size)]
        results = self._pool.map(
            lambda chunk: self.store.run("materials/task_materials", {**params, "claim_ids": chunk}), chunks
        )
        return [row for part in results for row in part]

    def materials(self, request: GetMaterialsRequest) -> Materials:
        """The seeds' materials export (decisions 13-15), computed now from the edges by one Cypher aggregation.

        Every claim's confidence, uncertainty, controversy, alpha, beta, evidence_count and the three counts
        always use all of its edges; ``evidence_limit`` only bounds the evidence listed (0 lists none: the
        cheap call for scores only). Unknown task: NotFoundError.
        """
        task = self.tasks.get(request.task_id)
        opts = request.options
        params = {
            "task_id": request.task_id,
            "claim_ids": None,
            "evidence_limit": opts.evidence_limit,
            "include_neutral": opts.include_neutral,
            "include_not_adopted": opts.include_not_adopted,
        }
        rows = self._rows(params)
        intervals = credible_intervals([r["alpha"] for r in rows], [r["beta"] for r in rows])
        claims: list[dict[str, Any]] = []
        for row, interval in zip(rows, intervals, strict=True):
            posterior = Posterior(
                row["alpha"], row["beta"], row["supports_count"], row["refutes_count"], row["neutral_count"]
            )
            claims.append(
                {
                    "claim_id": row["claim_id"],
                    "text": row["text"],
                    **beta_stats(posterior).model_dump(),
                    "supports_count": row["supports_count"],
                    "refutes_count": row["refutes_count"],
                    "neutral_count": row["neutral_count"],
                    "claim_adoption_status": row["claim_adoption_status"],
                    "claim_rejection_reason": row["claim_rejection_reason"],
                    "credible_interval_95": interval,
                    **verification(row["supporting_pages"], row["refutes_count"], row["security_rejections"]),
                    "evidence": row["evidence"],
                    "evidence_truncated": row["evidence_available"] > len(row["evidence"]),
                    "evidence_years": {"oldest": row["oldest"], "newest": row["newest"]},
                }
            )
        # one validation of the whole tree (pydantic-core), not one call per evidence item
        return Materials.model_validate(
            {
                "task_id": task["id"],
                "hypothesis": task["hypothesis"],
                "status": task["status"],
                "claims": claims,
                "computed_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        )
