"""A task's webhook: after each run that moved the task's claims, a small signed JSON POST
(docs/concepts/living-evidence.md).

The body: ``{"event": "run", "task_id", "run_id", "kind", "cause_id", "changed_claims", "sent_at"}``; the header
``X-Lyra-Signature: sha256=<hex HMAC-SHA256 of the raw body under the task's secret>``. The URL obeys the
fetcher's SSRF rules (lyra/sources/web/ssrf.py): http(s) only, no credentials, no private / loopback / link-local
/ metadata address unless LYRA_FETCH_ALLOW_HOSTS allows it, checked when it is set and again on the connection
(the address actually connected to). No redirect is followed. A delivery runs in a thread of its own, at most
``attempts`` tries (a network error, a 429 or a 5xx is tried again after a growing pause; another answer is
final); what it gave is kept on the run (cypher/timeline/set_run_webhook) and logged, and never fails the run.

The signing secret never goes into the graph (``query_graph`` reads every property there): it is kept in
``<state_dir>/auth/webhooks.json`` (:class:`WebhookSecrets`, an owner-only file like the cookies a person gave), and
the task node keeps only the URL and the secret's fingerprint (the first 8 hex digits of its sha256), so a reader
of the graph can tell which secret is in force without learning it. A secret found on a task node (a graph written
by an older Lyra) moves to the file the first time the webhook is used or set, and leaves the node. A task's
clean-up forgets its secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from lyra.core.errors import InvalidInputError, NotFoundError
from lyra.graph.store import GraphStore
from lyra.graph.tasks import TaskRepository
from lyra.models.timeline import RunRecorded
from lyra.models.webhooks import SIGNATURE_HEADER, SetWebhookRequest, WebhookSetting
from lyra.services.secret_file import SecretFile
from lyra.services.timeline import TimelineService
from lyra.sources.web.ssrf import AddressPolicy, AddressRefused, GuardedTransport, Resolver, system_resolver

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


def signature(secret: str, body: bytes) -> str:
    """The signature header's value: ``sha256=`` and the hex HMAC-SHA256 of ``body`` under ``secret``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def fingerprint(secret: str) -> str:
    """What the graph keeps of a secret: the first 8 hex digits of its sha256 (names it, does not reveal it)."""
    return hashlib.sha256(secret.encode()).hexdigest()[:8]


class WebhookSecrets:
    """Each task's webhook signing secret, in one owner-only file (:class:`~lyra.services.secret_file.SecretFile`:
    0600, locked, replaced atomically); never in Neo4j."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = SecretFile(path)

    def get(self, task_id: str) -> str | None:
        value = self._file.read().get(task_id)
        return value if isinstance(value, str) and value else None

    def put(self, task_id: str, secret: str) -> None:
        with self._file.edit() as data:
            data[task_id] = secret

    def drop_task(self, task_id: str) -> int:
        """Forget the task's secret (its webhook removed, or its clean-up); returns how many were forgotten."""
        with self._file.edit() as data:
            return 1 if data.pop(task_id, None) is not None else 0


@dataclass(frozen=True)
class Delivery:
    status: str  # delivered | failed
    attempts: int
    http_status: int | None
    error: str | None


class WebhookService:
    def __init__(
        self,
        store: GraphStore,
        tasks: TaskRepository,
        allow_hosts: Sequence[str],
        secrets: WebhookSecrets,
        *,
        user_agent: str = "Lyra",
        resolver: Resolver = system_resolver,
        attempts: int = 3,
        timeout_seconds: float = 5.0,
        backoff_seconds: float = 0.5,
    ) -> None:
        self.store = store
        self.tasks = tasks
        self.secrets = secrets
        self.policy = AddressPolicy.from_allow_list(allow_hosts)
        self.user_agent = user_agent
        self.resolver = resolver
        self.attempts = max(1, attempts)
        self.timeout_seconds = timeout_seconds
        self.backoff_seconds = backoff_seconds

    # ------------------------------------------------------------------ setting
    def set_webhook(self, request: SetWebhookRequest) -> WebhookSetting:
        self.tasks.get(request.task_id)
        task_id = request.task_id
        secret: str | None = None
        if request.url is not None:
            problem = self.policy.url_problem(request.url)
            if problem is not None:
                raise InvalidInputError("url", f"{problem[1]} (the fetcher's SSRF rules; LYRA_FETCH_ALLOW_HOSTS)")
            had = self.store.run("tasks/task_webhook", {"task_id": task_id})
            if request.rotate_secret or not had or self.secret_in_force(task_id, had[0]) is None:
                secret = secrets.token_urlsafe(32)
                self.secrets.put(task_id, secret)  # in the file before the graph names it
        elif request.rotate_secret:
            raise InvalidInputError("rotate_secret", "a secret belongs to a webhook: give its url too")
        rows = self.store.run(
            "tasks/set_webhook",
            {"task_id": task_id, "url": request.url, "fingerprint": fingerprint(secret) if secret else None},
        )
        if request.url is None or not rows:
            self.secrets.drop_task(task_id)
        if not rows:
            raise NotFoundError(f"task {task_id!r} not found")
        log.info("task %s: webhook %s", task_id, "set" if request.url else "removed")
        return WebhookSetting(
            task_id=task_id, url=rows[0]["url"], secret=secret, secret_fingerprint=rows[0]["fingerprint"]
        )

    def secret_in_force(self, task_id: str, row: Mapping[str, Any]) -> str | None:
        """The task's signing secret (``row``: tasks/task_webhook's answer), or None when none is known here (no
        webhook, or the file of this state folder holds another secret than the one the graph names). A secret
        still on the task node (an older Lyra wrote it) is moved to the file and removed from the node."""
        legacy = row.get("legacy_secret")
        if isinstance(legacy, str) and legacy:
            self.secrets.put(task_id, legacy)  # the file first: a failure in between leaves it in both, not lost
            self.store.run("tasks/migrate_webhook_secret", {"task_id": task_id, "fingerprint": fingerprint(legacy)})
            log.info("task %s: the webhook secret moved from the graph to %s", task_id, self.secrets.path)
            return legacy
        secret = self.secrets.get(task_id)
        if secret is None or row.get("fingerprint") != fingerprint(secret):
            return None
        return secret

    # ------------------------------------------------------------------ delivering
    def attach(self, timeline: TimelineService) -> Callable[[], None]:
        """Deliver after every run of ``timeline`` that moves claims; returns the call that stops it."""
        return timeline.listen(self.on_run)

    def on_run(self, run: RunRecorded) -> None:
        """Read the task's webhook; when it has one, deliver in a thread of its own (the run does not wait)."""
        rows = self.store.run("tasks/task_webhook", {"task_id": run.task_id})
        if not rows or not rows[0]["url"]:
            return
        url = str(rows[0]["url"])
        secret = self.secret_in_force(run.task_id, rows[0])
        if secret is None:  # nothing to sign with: said on the run, never sent unsigned or with another secret
            error = (
                f"no signing secret {rows[0]['fingerprint'] or ''} for this task in {self.secrets.path}; set the "
                "webhook again with rotate_secret (a new secret)"
            )
            try:
                self._record(run, self._failed(run, 0, None, error))
            except Exception:  # a delivery never fails anything: logged
                log.exception("task %s: the webhook failure of run %s could not be recorded", run.task_id, run.run_id)
            return
        thread = threading.Thread(
            target=self._deliver_and_record, args=(run, url, secret), name=f"webhook-{run.run_id}", daemon=True
        )
        thread.start()

    def _deliver_and_record(self, run: RunRecorded, url: str, secret: str) -> None:
        try:
            self._record(run, self.deliver(run, url, secret))
        except Exception:  # a delivery never fails anything: logged
            log.exception("task %s: the webhook of run %s could not be delivered or recorded", run.task_id, run.run_id)

    def _record(self, run: RunRecorded, delivery: Delivery) -> None:
        self.store.run(
            "timeline/set_run_webhook",
            {
                "task_id": run.task_id,
                "run_id": run.run_id,
                "status": delivery.status,
                "attempts": delivery.attempts,
                "http_status": delivery.http_status,
                "error": delivery.error,
            },
        )

    def deliver(self, run: RunRecorded, url: str, secret: str) -> Delivery:
        """POST the run's note to ``url``, signed with ``secret``, within ``attempts`` tries."""
        payload = {
            "event": "run",
            "task_id": run.task_id,
            "run_id": run.run_id,
            "kind": run.kind,
            "cause_id": run.cause_id,
            "changed_claims": run.claims_moved,
            "sent_at": datetime.now(UTC).isoformat(),
        }
        body = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": self.user_agent,
            SIGNATURE_HEADER: signature(secret, body),
            "X-Lyra-Event": "run",
            "X-Lyra-Delivery": run.run_id,
        }
        problem = self.policy.url_problem(url)
        if problem is not None:
            return self._failed(run, 0, None, f"{problem[0]}: {problem[1]}")
        error, status = "", None
        with httpx.Client(
            transport=GuardedTransport(self.policy, self.resolver),
            follow_redirects=False,
            trust_env=False,
            timeout=self.timeout_seconds,
        ) as client:
            for attempt in range(1, self.attempts + 1):
                try:
                    answer = client.post(url, content=body, headers=headers)
                except AddressRefused as exc:
                    return self._failed(run, attempt, None, f"ssrf_refused: {exc.reason}")
                except httpx.HTTPError as exc:
                    error, status = f"{type(exc).__name__}: {exc}", None
                else:
                    status = answer.status_code
                    if 200 <= status < 300:
                        log.info("task %s: webhook of run %s delivered (HTTP %d)", run.task_id, run.run_id, status)
                        return Delivery("delivered", attempt, status, None)
                    error = f"HTTP {status}"
                    if status not in RETRY_STATUSES:
                        return self._failed(run, attempt, status, error)
                if attempt < self.attempts:
                    time.sleep(self.backoff_seconds * 2 ** (attempt - 1))
        return self._failed(run, self.attempts, status, error)

    @staticmethod
    def _failed(run: RunRecorded, attempts: int, status: int | None, error: str) -> Delivery:
        log.warning(
            "task %s: webhook of run %s failed after %d attempt(s): %s", run.task_id, run.run_id, attempts, error
        )
        return Delivery("failed", attempts, status, error[:500])
