"""Task nodes: created through neomodel (the declared schema), read tolerantly through named statements.

Lyra writes tasks with a known status and Neo4j datetimes, but a graph may hold tasks written by someone else
(Neo4j Browser, an import). Reading never fails on those values: a status Lyra does not know is shown as it is, a
temporal value becomes an ISO-8601 string and any other timestamp is shown as given. Only a task without a
hypothesis cannot be shown; that is an :class:`InvalidGraphDataError` naming the node and the property.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from lyra.core.errors import ConflictError, InvalidGraphDataError, NotFoundError
from lyra.core.ids import new_id, task_label, validate_task_id
from lyra.core.text import claim_key
from lyra.graph.nodes import TaskNode
from lyra.graph.store import GraphStore, Transaction, to_plain
from lyra.models.graph import ClaimIn, TaskCreate

UNKNOWN_STATUS = "unknown"
TIMESTAMPS = ("created_at", "updated_at")


def readable_timestamp(value: Any) -> str | None:
    """A stored timestamp for display: temporal values as ISO-8601, anything else as given (``None`` stays)."""
    if value is None:
        return None
    plain = to_plain(value)
    return plain if isinstance(plain, str) else str(plain)


def read_task(row: Mapping[str, Any]) -> dict[str, Any]:
    """A task row (``id``, ``hypothesis``, ``status``, optional timestamps and counts) as Lyra shows it."""
    task_id = row["id"]
    hypothesis = row.get("hypothesis")
    if hypothesis is None:
        raise InvalidGraphDataError(
            f"the Task node with id {task_id!r} has no 'hypothesis' property",
            hint=f"set it, e.g. in Neo4j Browser: MATCH (t:Task {{id: {task_id!r}}}) SET t.hypothesis = '...'",
        )
    out = dict(row)
    out["hypothesis"] = hypothesis if isinstance(hypothesis, str) else str(to_plain(hypothesis))
    status = row.get("status")
    out["status"] = UNKNOWN_STATUS if status is None else status if isinstance(status, str) else str(status)
    for key in TIMESTAMPS:
        if key in out:
            out[key] = readable_timestamp(out[key])
    return out


def _created_task(node: TaskNode) -> dict[str, Any]:
    return {
        "id": node.uid,
        "hypothesis": node.hypothesis,
        "status": node.status,
        "created_at": node.created_at.isoformat() if node.created_at else None,
        "updated_at": node.updated_at.isoformat() if node.updated_at else None,
    }


class AddedClaim(NamedTuple):
    """One claim asked for: the id of the claim that now holds its text and whether this call created it (false:
    the task already had a claim with the same text, compared by :func:`~lyra.core.text.claim_key`)."""

    claim_id: str
    text: str
    created: bool


CLAIMS_PER_STATEMENT = 5000


class TaskRepository:
    def __init__(self, store: GraphStore) -> None:
        self.store = store

    def create(self, task: TaskCreate) -> dict[str, Any]:
        """A new Task node, validated by its neomodel class; ConflictError when the id is taken."""
        if self.exists(task.id):
            raise ConflictError(f"task {task.id!r} already exists")
        now = datetime.now(UTC)
        try:
            node = TaskNode(
                uid=task.id, hypothesis=task.hypothesis, status=task.status, created_at=now, updated_at=now
            ).save()
        except ConflictError:  # created concurrently since the check above (task_id_unique)
            raise ConflictError(f"task {task.id!r} already exists") from None
        return _created_task(node)

    def _row(self, task_id: str) -> dict[str, Any] | None:
        validate_task_id(task_id)
        rows = self.store.run("tasks/get_task", {"task_id": task_id})
        return rows[0] if rows else None

    def _require(self, task_id: str) -> dict[str, Any]:
        row = self._row(task_id)
        if row is None:
            raise NotFoundError(f"task {task_id!r} does not exist", hint="`lyra task list` shows the tasks")
        return row

    def ensure_exists(self, task_id: str) -> None:
        """NotFoundError (with a hint) unless the task exists; unlike get, its properties need not be readable."""
        self._require(task_id)

    def get(self, task_id: str) -> dict[str, Any]:
        return read_task(self._require(task_id))

    def exists(self, task_id: str) -> bool:
        return self._row(task_id) is not None

    def list(self) -> list[dict[str, Any]]:
        return [read_task(row) for row in self.store.run("tasks/list_tasks")]

    def add_claims(self, task_id: str, claims: Sequence[ClaimIn]) -> builtins.list[AddedClaim]:
        """Add claims to a task, once per text: a claim whose text (by :func:`~lyra.core.text.claim_key`) the task
        already holds, or that comes earlier in ``claims``, is not created again; its existing claim is returned.
        One result per item of ``claims``, in order. One transaction under the task's lock, so concurrent adds of the
        same text make one claim. NotFoundError for an unknown task or an unknown source fragment id."""
        validate_task_id(task_id)
        fragment_ids = sorted({f for c in claims for f in c.source_fragment_ids})

        def work(tx: Transaction) -> builtins.list[AddedClaim]:
            if not tx.run("tasks/lock_task", {"task_id": task_id}):
                raise NotFoundError(f"task {task_id!r} does not exist", hint="`lyra task list` shows the tasks")
            if fragment_ids:
                missing = tx.run("evidence/missing_endpoints", {"fragment_ids": fragment_ids, "claim_ids": []})
                if missing[0]["missing_fragments"]:
                    unknown = ", ".join(map(str, missing[0]["missing_fragments"][:5]))
                    raise NotFoundError(f"claims: unknown fragment id(s): {unknown}")
            held = {
                claim_key(row["text"]): AddedClaim(row["claim_id"], row["text"], created=False)
                for row in reversed(tx.run("tasks/task_claims", {"task_id": task_id}))  # the oldest claim wins
                if isinstance(row["text"], str)
            }
            added: builtins.list[AddedClaim] = []
            rows: builtins.list[dict[str, Any]] = []
            for claim in claims:
                key = claim_key(claim.text)
                known = held.get(key)
                if known is not None:
                    added.append(known._replace(created=False))
                    continue
                claim_id = new_id("clm")
                rows.append(
                    {
                        "id": claim_id,
                        "text": claim.text,
                        "source_fragment_ids": builtins.list(claim.source_fragment_ids),
                        "extraction_rules_version": claim.extraction_rules_version,
                    }
                )
                held[key] = AddedClaim(claim_id, claim.text, created=True)
                added.append(held[key])
            for start in range(0, len(rows), CLAIMS_PER_STATEMENT):
                batch = rows[start : start + CLAIMS_PER_STATEMENT]
                params = {"task_id": task_id, "task_label": task_label(task_id), "rows": batch}
                written = tx.run("evidence/create_claims", params)
                expected = sum(len(r["source_fragment_ids"]) for r in batch)
                if len(written) != len(batch) or sum(r["linked"] for r in written) != expected:
                    # the task or a source fragment was removed since the checks above: roll back
                    raise NotFoundError(f"claims: task {task_id!r} or a source fragment was removed meanwhile")
            return added

        return self.store.write_transaction("tasks/add_claims", work)

    def mark_ran(self, task_id: str) -> str:
        """A task still ``created`` becomes ``completed`` (evidence gathered without jobs); returns its status."""
        validate_task_id(task_id)
        rows = self.store.run("tasks/mark_ran", {"task_id": task_id})
        if not rows:
            raise NotFoundError(f"task {task_id!r} does not exist", hint="`lyra task list` shows the tasks")
        return str(rows[0]["status"])
