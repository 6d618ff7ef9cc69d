"""Tasks and their claims."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lyra.graph.evidence import EvidenceRepository
from lyra.graph.tasks import TaskRepository
from lyra.models.graph import ClaimIn, TaskCreate
from lyra.models.validation import parse_one


class TaskService:
    def __init__(self, tasks: TaskRepository, evidence: EvidenceRepository) -> None:
        self.tasks = tasks
        self.evidence = evidence

    def create_task(self, task_id: str, hypothesis: str, *, hypothesis_as_claim: bool = True) -> dict[str, Any]:
        """Create a task; by default its hypothesis becomes its first claim."""
        spec = parse_one(TaskCreate, {"id": task_id, "hypothesis": hypothesis})
        task = self.tasks.create(spec)
        if hypothesis_as_claim:
            task["claim_ids"] = self.evidence.create_claims(spec.id, [ClaimIn(text=spec.hypothesis)]).ids
        return task

    def add_claims(self, task_id: str, texts: Sequence[str]) -> list[str]:
        self.tasks.get(task_id)
        return self.evidence.create_claims(task_id, [{"text": t} for t in texts]).ids

    def get_task(self, task_id: str) -> dict[str, Any]:
        return self.tasks.get(task_id)

    def list_tasks(self) -> list[dict[str, Any]]:
        return self.tasks.list()
