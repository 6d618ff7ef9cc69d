"""Task nodes, through neomodel (single-node reads and writes)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from neomodel.exceptions import UniqueProperty

from lyra.core.errors import ConflictError, NotFoundError
from lyra.core.ids import validate_task_id
from lyra.graph.nodes import TaskNode
from lyra.graph.store import GraphStore, to_plain, translate_errors
from lyra.models.graph import TaskCreate


def _task_dict(node: TaskNode) -> dict[str, Any]:
    return {
        "id": node.uid,
        "hypothesis": node.hypothesis,
        "status": node.status,
        "created_at": node.created_at.isoformat() if node.created_at else None,
        "updated_at": node.updated_at.isoformat() if node.updated_at else None,
    }


class TaskRepository:
    def __init__(self, store: GraphStore) -> None:
        self.store = store

    def create(self, task: TaskCreate) -> dict[str, Any]:
        with translate_errors(f"creating task {task.id!r}"):
            if TaskNode.nodes.get_or_none(uid=task.id) is not None:
                raise ConflictError(f"task {task.id!r} already exists")
            now = datetime.now(UTC)
            try:
                node = TaskNode(
                    uid=task.id, hypothesis=task.hypothesis, status=task.status, created_at=now, updated_at=now
                ).save()
            except UniqueProperty:  # created concurrently since the check above
                raise ConflictError(f"task {task.id!r} already exists") from None
        return _task_dict(node)

    def get(self, task_id: str) -> dict[str, Any]:
        validate_task_id(task_id)
        with translate_errors(f"reading task {task_id!r}"):
            node = TaskNode.nodes.get_or_none(uid=task_id)
        if node is None:
            raise NotFoundError(f"task {task_id!r} does not exist", hint="`lyra task list` shows the tasks")
        return _task_dict(node)

    def exists(self, task_id: str) -> bool:
        validate_task_id(task_id)
        with translate_errors(f"reading task {task_id!r}"):
            return TaskNode.nodes.get_or_none(uid=task_id) is not None

    def list(self) -> list[dict[str, Any]]:
        return [to_plain(row) for row in self.store.run("tasks/list_tasks")]
