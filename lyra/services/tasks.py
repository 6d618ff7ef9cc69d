"""Tasks and their claims. A task holds each claim once: adding a text it already holds (compared without case,
extra whitespace or trailing punctuation, :func:`~lyra.core.text.claim_key`) returns the claim it has."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lyra.core.errors import InvalidInputError
from lyra.graph.evidence import EvidenceRepository
from lyra.graph.tasks import AddedClaim, TaskRepository
from lyra.models.graph import ClaimIn, TaskCreate
from lyra.models.validation import parse_many, parse_one


class TaskService:
    def __init__(self, tasks: TaskRepository, evidence: EvidenceRepository) -> None:
        self.tasks = tasks
        self.evidence = evidence

    def create_task(self, task_id: str, hypothesis: str, *, hypothesis_as_claim: bool = True) -> dict[str, Any]:
        """Create a task; by default its hypothesis becomes its first claim."""
        spec = parse_one(TaskCreate, {"id": task_id, "hypothesis": hypothesis})
        task = self.tasks.create(spec)
        if hypothesis_as_claim:
            task["claim_ids"] = self.add_claims(spec.id, [spec.hypothesis])
        return task

    def add_claims(
        self,
        task_id: str,
        texts: Sequence[str],
        source_fragment_ids: Sequence[Sequence[str]] | None = None,
        rules_version: int | None = None,
    ) -> list[str]:
        """Add claims to a task; one claim id per text, in order (see :meth:`add_claims_reported`, which also says
        which claims were new)."""
        added = self.add_claims_reported(task_id, texts, source_fragment_ids, rules_version)
        return [claim.claim_id for claim in added]

    def add_claims_reported(
        self,
        task_id: str,
        texts: Sequence[str],
        source_fragment_ids: Sequence[Sequence[str]] | None = None,
        rules_version: int | None = None,
    ) -> list[AddedClaim]:
        """Add claims to a task, each text once: a text the task already holds (or met earlier in ``texts``) is not
        added again, its existing claim is returned with ``created=False``.

        Args:
            task_id: an existing task (NotFoundError otherwise).
            texts: the claims' texts.
            source_fragment_ids: ``source_fragment_ids[i]``: the fragments claim ``i`` was extracted from (an empty
                sequence, or no ``source_fragment_ids`` at all, for claims a person wrote); the links are written
                with the claims. Only extracted claims count towards their source domains' rejection rates (seed
                003 decision record 0008). A claim that already existed keeps its own links.
            rules_version: the claim-extraction rule-set version the claims were extracted under.

        Returns:
            One :class:`~lyra.graph.tasks.AddedClaim` per text, in order.
        """
        sources: list[list[str]] = [[] for _ in texts]
        if source_fragment_ids is not None:
            if len(source_fragment_ids) != len(texts):
                raise InvalidInputError(
                    "source_fragment_ids",
                    f"{len(source_fragment_ids)} list(s) of source fragments for {len(texts)} claim(s); "
                    "give one per claim",
                )
            for index, ids in enumerate(source_fragment_ids):
                if isinstance(ids, str):  # a bare id would be read as a sequence of characters
                    raise InvalidInputError(f"source_fragment_ids[{index}]", "give a list of fragment ids")
            sources = [list(ids) for ids in source_fragment_ids]
        rows = [
            {"text": t, "source_fragment_ids": s, "extraction_rules_version": rules_version}
            for t, s in zip(texts, sources, strict=True)
        ]
        claims = parse_many(ClaimIn, rows, "claims")
        return self.tasks.add_claims(task_id, claims)

    def get_task(self, task_id: str) -> dict[str, Any]:
        return self.tasks.get(task_id)

    def list_tasks(self) -> list[dict[str, Any]]:
        return self.tasks.list()

    def mark_ran(self, task_id: str) -> str:
        """Record that the task gathered evidence outside the job queue (a synchronous ingest): a task still
        ``created`` becomes ``completed``, as it would after its jobs ran. Returns the task's status."""
        return self.tasks.mark_ran(task_id)
