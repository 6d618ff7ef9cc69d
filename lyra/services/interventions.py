"""A human in the loop: the task-scoped intervention queue for CAPTCHA, login and consent walls (decision record 0012).

When the web fetcher meets such a page (``needs_intervention``, :mod:`lyra.sources.web.challenge`), the job is not
failed: the worker *parks* it (state ``waiting``) and opens an ``(:Intervention)`` item of the task in the same
transaction (``cypher/interventions/park_job.cypher``). The domain is then *paused for that task*: the task's other
``url`` jobs on that domain do not fetch it, they wait too (``hold_job``), so the site is not asked again while a
person looks at it. Other tasks are not affected.

A person resolves an item (:meth:`InterventionService.resolve`, MCP ``resolve_auth``, REST
``POST /api/v1/tasks/{task_id}/auth-queue/{intervention_id}/resolve``, CLI ``lyra task resolve-auth``):

* ``retry`` — queue the job again (after solving it in their own browser, or once a block was lifted);
* ``skip`` — end the job as ``skipped`` with the note;
* ``cookie`` — keep a Cookie header value for the task and domain (what the person's browser sends to the site
  after getting past the wall) and queue the job again: it fetches with that cookie (sent to that domain and its
  subdomains only). The value is a secret: it is kept in a file readable by its owner only
  (``<state_dir>/auth/cookies.json``, mode 0600), never in Neo4j (``query_graph`` reads the graph), never returned
  by any read and never logged; items only say ``cookie_stored``. It is removed with the task.

When the last pending item of a task and domain is resolved (whatever the action) the domain is unpaused: the jobs
held for it are queued again. Nothing is ever solved automatically.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lyra.core.errors import ConflictError, InvalidInputError, NotFoundError
from lyra.core.ids import new_id, validate_task_id
from lyra.graph.store import GraphStore, to_plain
from lyra.graph.tasks import TaskRepository
from lyra.models.api import (
    AuthQueue,
    GetAuthQueueRequest,
    InterventionItem,
    InterventionSummary,
    ResolveAuthRequest,
    ResolveAuthResponse,
)
from lyra.services.secret_file import SecretFile

STATUS_ITEMS = 20  # pending items shown by get_status


class CookieStore:
    """Cookie header values per task and domain, in one JSON file only its owner may read (0600, folder 0700; the
    locked, atomically replaced file of :class:`~lyra.services.secret_file.SecretFile`), so the CLI, the server and
    its worker threads see one consistent file. The values never leave this class except through :meth:`for_task`
    (the fetcher's use)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = SecretFile(path)

    def put(self, task_id: str, domain: str, value: str) -> None:
        with self._file.edit() as data:
            data.setdefault(task_id, {})[domain] = value

    def for_task(self, task_id: str) -> dict[str, str]:
        """domain -> Cookie header value of one task (for the fetcher only)."""
        return dict(self._file.read().get(task_id, {}))

    def domains(self, task_id: str) -> set[str]:
        return set(self._file.read().get(task_id, {}))

    def drop_task(self, task_id: str) -> int:
        """Forget a task's cookies (its clean-up); returns how many there were."""
        with self._file.edit() as data:
            return len(data.pop(task_id, {}))


def _item(row: dict[str, Any], cookie_domains: set[str]) -> InterventionItem:
    plain = to_plain(row)
    return InterventionItem(**plain, cookie_stored=plain["domain"] in cookie_domains)


class InterventionService:
    """The intervention queue of a task: read it, resolve its items (see the module docstring)."""

    def __init__(
        self, store: GraphStore, tasks: TaskRepository, cookies: CookieStore, wake: Callable[[], None] | None = None
    ) -> None:
        self.store = store
        self.tasks = tasks
        self.cookies = cookies
        self._wake = wake or (lambda: None)

    # ------------------------------------------------------------------ reads
    def queue(self, request: GetAuthQueueRequest) -> AuthQueue:
        self.tasks.get(request.task_id)
        status = None if request.status == "all" else request.status
        rows = self.store.run(
            "interventions/task_interventions", {"task_id": request.task_id, "status": status, "limit": request.limit}
        )
        counts = self.store.run("interventions/task_intervention_counts", {"task_id": request.task_id})[0]
        domains = self.cookies.domains(request.task_id)
        items = [_item(r, domains) for r in rows]
        next_step = (
            "for each item: open its url in your own browser and get past the wall, then resolve_auth with "
            "action=retry, or action=cookie with the Cookie header your browser sends to that site; action=skip "
            "gives up on the page"
            if counts["pending"]
            else "nothing waits for a person"
        )
        return AuthQueue(
            task_id=request.task_id,
            pending=counts["pending"],
            paused_domains=sorted(counts["paused"]),
            held_jobs=counts["held"],
            items=items,
            next_step=next_step,
        )

    def summary(self, task_id: str) -> InterventionSummary:
        """What get_status shows: counts, paused domains, the pending items."""
        counts = self.store.run("interventions/task_intervention_counts", {"task_id": task_id})
        if not counts:
            return InterventionSummary(pending=0, resolved=0, skipped=0, paused_domains=[], held_jobs=0, items=[])
        row = counts[0]
        items: list[InterventionItem] = []
        if row["pending"]:
            rows = self.store.run(
                "interventions/task_interventions", {"task_id": task_id, "status": "pending", "limit": STATUS_ITEMS}
            )
            domains = self.cookies.domains(task_id)
            items = [_item(r, domains) for r in rows]
        return InterventionSummary(
            pending=row["pending"],
            resolved=row["resolved"],
            skipped=row["skipped"],
            paused_domains=sorted(row["paused"]),
            held_jobs=row["held"],
            items=items,
        )

    def domain_paused(self, task_id: str, domain: str) -> list[str]:
        """The ids of the task's pending items for ``domain`` (empty: not paused)."""
        row = self.store.run("interventions/domain_paused", {"task_id": task_id, "domain": domain})[0]
        return list(row["ids"]) if row["pending"] else []

    def cookies_for(self, task_id: str) -> dict[str, str]:
        return self.cookies.for_task(task_id)

    # ------------------------------------------------------------------ resolve
    def resolve(self, request: ResolveAuthRequest) -> ResolveAuthResponse:
        task_id = validate_task_id(request.task_id)
        self.tasks.get(task_id)
        if request.action == "cookie" and request.cookie is None:
            raise InvalidInputError(
                "cookie",
                "required when action is 'cookie'",
                hint="copy the Cookie request header your browser sends to the site after you got past the wall",
            )
        if request.action != "cookie" and request.cookie is not None:
            raise InvalidInputError("cookie", f"only taken with action 'cookie', not {request.action!r}")
        found = self.store.run("interventions/intervention_by_id", {"id": request.intervention_id})
        if not found:
            raise NotFoundError(
                f"no intervention item {request.intervention_id!r}",
                hint=f"get_auth_queue(task_id={task_id!r}) lists the task's items",
            )
        item = found[0]
        if item["task_id"] != task_id:
            raise InvalidInputError(
                "intervention_id",
                f"{request.intervention_id!r} belongs to another task, not to {task_id!r}",
                hint=f"get_auth_queue(task_id={task_id!r}) lists this task's items",
            )
        if item["status"] != "pending":
            raise ConflictError(
                f"intervention item {request.intervention_id!r} is already {item['status']} "
                f"(action {item['action']!r})",
                hint="only pending items can be resolved; a job that meets the wall again reopens its item",
            )
        if request.cookie is not None:
            self.cookies.put(task_id, item["domain"], request.cookie.get_secret_value())
        rows = self.store.run(
            "interventions/resolve_intervention",
            {
                "task_id": task_id,
                "id": request.intervention_id,
                "token": new_id("resolving"),
                "status": "skipped" if request.action == "skip" else "resolved",
                "action": request.action,
                "resolver": request.resolver,
                "note": request.note,
            },
        )
        if not rows:  # resolved by someone else between the check and the write
            raise ConflictError(f"intervention item {request.intervention_id!r} was resolved meanwhile")
        row = rows[0]
        if row["job_state"] == "queued" or row["released"]:
            self._wake()
        if row["domain_pending"]:
            next_step = f"{row['domain_pending']} more item(s) of {row['domain']} are pending for this task"
        elif request.action == "skip":
            next_step = "the job is skipped; get_status shows the task's progress"
        else:
            next_step = "the job is queued again; get_status(task_id, wait=30) shows when it ran"
        return ResolveAuthResponse(
            task_id=task_id,
            intervention_id=row["id"],
            status=row["status"],
            action=request.action,
            domain=row["domain"],
            job_id=row["job_id"],
            job_state=row["job_state"],
            released_jobs=row["released"],
            domain_paused=row["domain_pending"] > 0,
            cookie_stored=item["domain"] in self.cookies.domains(task_id),
            next_step=next_step,
        )

    def forget_task(self, task_id: str) -> int:
        """The task's secrets go with it (called by the task clean-up)."""
        return self.cookies.drop_task(task_id)
