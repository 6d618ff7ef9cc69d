"""Research work as background jobs kept in Neo4j, and the worker pool that runs them.

A ``:Job`` node per queued target (state queued → running → done | failed | cancelled, attempts, error). Workers
are threads inside the server process: each takes the oldest queued job (a compare-and-set under the node's
write lock, so exactly one worker of any thread or process wins it), runs it, and records how it ended. Each run
holds a claim token: only that run beats for the job and records its end. A heartbeat thread keeps running jobs
alive and carries "cancel" requests from ``stop_task``. When a server dies mid-job its heartbeat stops; after
``stale_seconds`` any pool (the restarted one included) puts the job back in the queue, up to ``max_attempts``
runs. Every write a job makes is idempotent (pages by URL, fragments by text hash, one stance edge per pair), so
running a job again adds nothing twice. A run that loses Neo4j (``graph_unavailable``) is treated the same way: it
records nothing, and the job is resumed once Neo4j answers again. A run that meets a CAPTCHA, login or consent wall
*parks* its job (state ``waiting``) with an intervention item for a person (``lyra.services.interventions``); a
person's ``resolve_auth`` queues it again (or ends it as ``skipped``).

Jobs run in the order they were queued (``queue_seq``, one counter in Neo4j). Besides a task's targets, the service
queues jobs of its own (no task: the learning loop's proposal batch, ``queue_service_job``); ``route_jobs`` hands
each kind to its executor, and a job reports how far it is with ``JobContext.report`` (``get_job`` shows it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from lyra.core.context import current_job
from lyra.core.errors import GraphUnavailableError, InvalidInputError, JobCancelled, LyraError, NotFoundError
from lyra.core.ids import new_id, validate_task_id
from lyra.graph.store import GraphStore, to_plain
from lyra.graph.tasks import TaskRepository
from lyra.models.api import (
    JobInfo,
    QueuedCandidate,
    QueuedTarget,
    QueueReferenceCandidatesRequest,
    QueueReferenceCandidatesResponse,
    QueueTargetsRequest,
    QueueTargetsResponse,
    Target,
    TargetOptions,
)

log = logging.getLogger(__name__)
CLAIM_TRIES = 5  # a worker that loses the oldest job to another one tries the next at once, this many times
DOI_PREFIXES = ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "doi:")


@dataclass(frozen=True)
class ClaimedJob:
    id: str
    task_id: str  # "" for a job of the service itself (queue_service_job)
    kind: str
    value: str
    options: dict[str, Any]
    attempts: int
    claim: str  # the token of this run (finish_job and heartbeat_jobs match it)


@dataclass
class JobContext:
    """Handed to the code running a job: cancellation, when the job started, and where its progress goes."""

    job: ClaimedJob
    started: float = field(default_factory=time.monotonic)
    _cancel: threading.Event = field(default_factory=threading.Event)
    progress: dict[str, Any] | None = None  # what the job reported last
    _sink: Callable[[dict[str, Any]], None] | None = None  # the worker pool keeps it on the Job node

    def cancel(self) -> None:
        self._cancel.set()

    def report(self, progress: Mapping[str, Any]) -> None:
        """Record how far the job is (its stage and counters; JSON values): kept on the Job node, where ``get_job``
        shows it. Also a point where a stop request is honoured (raises JobCancelled)."""
        self.progress = dict(progress)
        if self._sink is not None:
            self._sink(self.progress)
        self.check()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check(self) -> None:
        """Raise JobCancelled when a stop asked for it (called between units of work)."""
        if self._cancel.is_set():
            raise JobCancelled(f"job {self.job.id} was cancelled by stop_task(mode=immediate)")

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


@dataclass(frozen=True)
class Park:
    """A job that must wait for a person instead of ending: it met a wall (``kind``, ``url``, ``reason``: its own
    intervention item is opened), or its domain is paused for its task (``kind`` None: it waits without an item and
    is queued again when the domain's last pending item is resolved). ``error`` is what the job shows meanwhile."""

    domain: str
    error: str
    kind: str | None = None
    url: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class JobOutcome:
    result: dict[str, Any]
    pages: int = 0
    park: Park | None = None  # set: the job waits for a person (state 'waiting') instead of ending


JobExecutor = Callable[[ClaimedJob, JobContext], JobOutcome]


def route_jobs(default: JobExecutor, by_kind: Mapping[str, JobExecutor]) -> JobExecutor:
    """One executor for a worker pool: a job whose kind ``by_kind`` names goes to that executor, any other to
    ``default`` (the research executor of a task's targets)."""

    def run(job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        return by_kind.get(job.kind, default)(job, ctx)

    return run


@dataclass(frozen=True)
class ServiceJob:
    """A job of the service itself as ``queue_service_job`` left it: ``queued`` is false when one of its key was
    already queued or running (this is that one)."""

    id: str
    state: str
    queued: bool


# ----------------------------------------------------------------------------- targets
def resolve_file_target(value: str, roots: Sequence[Path], field_name: str) -> Path:
    """A file or folder below one of the allowed roots (symlinks resolved), else InvalidInputError."""
    if not roots:
        raise InvalidInputError(
            field_name,
            "file targets are disabled: no allowed folder is configured",
            hint="set LYRA_ALLOWED_ROOTS to the folders Lyra may read",
        )
    try:
        raw = Path(value).expanduser()
    except RuntimeError:  # "~name/..." of a user this machine does not know
        raise InvalidInputError(field_name, f"{value!r} names the home folder of an unknown user") from None
    candidates = [raw] if raw.is_absolute() else [root / raw for root in roots]
    resolved_roots = [root.resolve() for root in roots]
    try:
        for candidate in candidates:
            path = candidate.resolve()
            if not any(path == root or path.is_relative_to(root) for root in resolved_roots):
                continue
            if path.exists():
                return path
        outside = raw.is_absolute() and not any(raw.resolve().is_relative_to(r) for r in resolved_roots)
    except OSError as exc:  # a name longer than the file system allows, ...: the reason only, never the path
        raise InvalidInputError(field_name, f"not a usable path: {exc.strerror or type(exc).__name__}") from None
    if outside:
        raise InvalidInputError(
            field_name,
            f"{value!r} is outside the allowed folders",
            hint="allowed: " + ", ".join(str(r) for r in resolved_roots) + " (LYRA_ALLOWED_ROOTS)",
        )
    raise InvalidInputError(field_name, f"no such file or folder below the allowed folders: {value!r}")


DEFAULT_PORTS = {"http": 80, "https": 443}


def canonical_url(url: str) -> str:
    """A URL target's identity: what the server is asked for. Two URLs are the same target exactly when they make
    the same request, so what never reaches the server goes and what does is kept as given:

    * the fragment (``#x``) is dropped: browsers never send it;
    * the scheme and host are lower-cased and a default port (``:80`` for http, ``:443`` for https) is dropped;
      an empty path becomes ``/`` (``http://h`` asks for ``GET /``);
    * the path, a trailing slash included, and the query are kept as they are: ``/ghana.html/`` and
      ``/ghana.html`` are different requests (on some servers a 404 or another resource, on others the same
      page), and ``/docs/v1.2/`` must not become ``/docs/v1.2``. A page read twice under two addresses is still
      one piece of evidence: its fragments are de-duplicated by text.

    Expects an http(s) URL with a host (``normalise_target`` checks it first).
    """
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    host = (parsed.hostname or "").lower()
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    port = parsed.port
    userinfo = parsed.netloc.rpartition("@")[0]
    netloc = (f"{userinfo}@" if userinfo else "") + host
    if port is not None and port != DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    return parsed._replace(scheme=scheme, netloc=netloc, path=parsed.path or "/", fragment="").geturl()


def normalise_target(target: Target, roots: Sequence[Path], field_name: str) -> str:
    """The canonical form of a target's value (what duplicates are detected on); validates it."""
    value = target.value.strip()
    if target.kind == "file":
        return str(resolve_file_target(value, roots, field_name))
    if target.kind == "url":
        try:
            parsed = urlparse(value)
            _ = parsed.port  # a port out of range or not a number raises here
        except ValueError as exc:  # an unclosed or invalid [IPv6] host, a bad port
            raise InvalidInputError(field_name, f"not a valid URL: {exc}") from None
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise InvalidInputError(field_name, "must be an http(s) URL with a host")
        return canonical_url(value)
    if target.kind == "doi":
        doi = value
        for prefix in DOI_PREFIXES:
            if doi.lower().startswith(prefix):
                doi = doi[len(prefix) :]
        doi = doi.strip().lower()
        if not doi.startswith("10.") or "/" not in doi or " " in doi:
            raise InvalidInputError(field_name, f"{value!r} is not a DOI (expected 10.<registrant>/<suffix>)")
        return doi
    return " ".join(value.lower().split())  # query


REFRESH_KINDS = ("query", "url", "doi")  # the targets a refresh runs again (a file is re-read by queuing it)


def job_key(task_id: str, kind: str, canonical: str) -> str:
    return hashlib.sha256(f"{task_id}\x1f{kind}\x1f{canonical}".encode()).hexdigest()


# ----------------------------------------------------------------------------- queue
class JobService:
    def __init__(self, store: GraphStore, tasks: TaskRepository, allowed_roots: Sequence[Path]) -> None:
        self.store = store
        self.tasks = tasks
        self.allowed_roots = list(allowed_roots)
        self._listeners: list[Callable[[], None]] = []

    def on_queued(self, listener: Callable[[], None]) -> None:
        """Called after new jobs are queued (a worker pool in this process wakes up at once)."""
        self._listeners.append(listener)

    def notify_queued(self) -> None:
        """Jobs were queued by another path (a person resolving an intervention item): wake the workers."""
        for listener in self._listeners:
            listener()

    def queue(self, request: QueueTargetsRequest) -> QueueTargetsResponse:
        """Validate every target, then queue them in one transaction; duplicates are reported, not re-queued."""
        self.tasks.get(request.task_id)
        rows: list[dict[str, Any]] = []
        for index, target in enumerate(request.targets):
            canonical = normalise_target(target, self.allowed_roots, f"targets[{index}].value")
            rows.append(
                {
                    "id": new_id("job"),
                    "key": job_key(request.task_id, target.kind, canonical),
                    "kind": target.kind,
                    "value": canonical,
                    "options": target.options.model_dump_json(),
                }
            )
        unique = list({row["key"]: row for row in reversed(rows)}.values())[::-1]  # first occurrence of each key
        written = {
            out["key"]: out for out in self.store.run("jobs/enqueue_jobs", {"task_id": request.task_id, "rows": unique})
        }
        jobs: list[QueuedTarget] = []
        first_index: dict[str, int] = {}
        for index, row in enumerate(rows):
            out = written[row["key"]]
            duplicate = not out["queued"] or first_index.setdefault(row["key"], index) != index
            jobs.append(
                QueuedTarget(
                    index=index,
                    kind=row["kind"],
                    value=row["value"],
                    job_id=out["id"],
                    state=out["state"],
                    duplicate=duplicate,
                )
            )
        queued = sum(1 for j in jobs if not j.duplicate)
        if queued:
            for listener in self._listeners:
                listener()
        return QueueTargetsResponse(task_id=request.task_id, queued=queued, duplicates=len(jobs) - queued, jobs=jobs)

    def requeue_targets(
        self, task_id: str, refresh_id: str, max_targets: int, rechecked: frozenset[str] = frozenset()
    ) -> list[dict[str, Any]]:
        """A refresh: the task's earlier query, url and doi targets queued again as new jobs, oldest first, at most
        ``max_targets``. Each gets a key of its own for this refresh (``job_key`` over the target and the refresh
        id), so a target whose earlier job is done runs again; a target with a job still queued, running or waiting
        is left alone (``pending``). A url target in ``rechecked`` (a known page this refresh asked with a
        conditional GET) is not queued (``rechecked``). One entry per target: kind, value, job_id (or None) and
        status."""
        self.tasks.get(task_id)
        rows = self.store.run("jobs/task_targets", {"task_id": task_id, "kinds": list(REFRESH_KINDS)})
        listed: list[dict[str, Any]] = []
        queue: list[dict[str, Any]] = []
        for row in rows:
            entry: dict[str, Any] = {"kind": row["kind"], "value": row["value"], "job_id": None}
            if row["kind"] == "url" and row["value"] in rechecked:
                entry["status"] = "rechecked"
            elif row["pending"]:
                entry["status"] = "pending"
            elif len(queue) >= max_targets:
                entry["status"] = "over_budget"
            else:
                entry["status"] = "queued"
                queue.append(
                    {
                        "id": new_id("job"),
                        "key": job_key(task_id, row["kind"], f"{row['value']}\x1frefresh:{refresh_id}"),
                        "kind": row["kind"],
                        "value": row["value"],
                        "options": row["options"] or TargetOptions().model_dump_json(),
                        "entry": entry,
                    }
                )
            listed.append(entry)
        if queue:
            written = {
                out["key"]: out
                for out in self.store.run(
                    "jobs/enqueue_jobs",
                    {"task_id": task_id, "rows": [{k: v for k, v in r.items() if k != "entry"} for r in queue]},
                )
            }
            for row in queue:
                row["entry"]["job_id"] = written[row["key"]]["id"]
            for listener in self._listeners:
                listener()
        return listed

    def queue_rereads(self, task_id: str, refresh_id: str, urls: Sequence[str]) -> dict[str, str]:
        """Known pages whose source changed (a refresh's conditional GET said so) queued to be read again as ``url``
        jobs, each under a key of its own for this refresh; url -> the job's id (an existing job of the same key
        keeps its id)."""
        if not urls:
            return {}
        rows = [
            {
                "id": new_id("job"),
                "key": job_key(task_id, "url", f"{url}\x1freread:{refresh_id}"),
                "kind": "url",
                "value": url,
                "options": TargetOptions().model_dump_json(),
            }
            for url in dict.fromkeys(urls)
        ]
        written = {out["key"]: out for out in self.store.run("jobs/enqueue_jobs", {"task_id": task_id, "rows": rows})}
        for listener in self._listeners:
            listener()
        return {row["value"]: str(written[row["key"]]["id"]) for row in rows if row["key"] in written}

    def queue_reference_candidates(self, request: QueueReferenceCandidatesRequest) -> QueueReferenceCandidatesResponse:
        """Queue the task's reference candidates (pages its evidence pages cite, not read yet) as ``doi`` targets, or
        as their paper address when they have no DOI, without further citation expansion (depth 1: decision record
        0011). Most-cited first; ``include_ids`` picks, ``exclude_ids`` leaves out."""
        self.tasks.get(request.task_id)
        if request.include_ids is not None and request.exclude_ids:
            raise InvalidInputError("exclude_ids", "give include_ids or exclude_ids, not both")
        rows = self.store.run("views/reference_candidates", {"task_id": request.task_id})
        by_id = {row["page_id"]: row for row in rows}
        if request.include_ids is not None:
            unknown = [pid for pid in request.include_ids if pid not in by_id]
            if unknown:
                raise InvalidInputError(
                    "include_ids",
                    f"not reference candidates of task {request.task_id!r}: {', '.join(unknown[:5])}",
                    hint="list them with query_view(name='reference_candidates')",
                )
            chosen = [by_id[pid] for pid in dict.fromkeys(request.include_ids)]
        else:
            excluded = set(request.exclude_ids)
            chosen = [row for row in rows if row["page_id"] not in excluded]
        chosen = [row for row in chosen if row["doi"] or row["url"]][: request.limit]
        targets = [
            Target(
                kind="doi" if row["doi"] else "url",
                value=row["doi"] or row["url"],
                options=TargetOptions(expand_citations=False),
            )
            for row in chosen
        ]
        if not targets:
            return QueueReferenceCandidatesResponse(
                task_id=request.task_id, candidates=len(rows), queued=0, duplicates=0, selected=[], jobs=[]
            )
        queued = self.queue(QueueTargetsRequest(task_id=request.task_id, targets=targets))
        return QueueReferenceCandidatesResponse(
            task_id=request.task_id,
            candidates=len(rows),
            queued=queued.queued,
            duplicates=queued.duplicates,
            selected=[
                QueuedCandidate(page_id=row["page_id"], target=target, cited_by=row["cited_by"])
                for row, target in zip(chosen, targets, strict=True)
            ],
            jobs=queued.jobs,
        )

    def queue_service_job(self, kind: str, key: str, options: Mapping[str, Any]) -> ServiceJob:
        """Queue a job of the service itself (no task), at most one per ``key`` queued or running at once."""
        row = self.store.run(
            "jobs/enqueue_service_job",
            {"key": key, "id": new_id("job"), "kind": kind, "value": key, "options": json.dumps(dict(options))},
        )[0]
        if row["queued"]:
            self.notify_queued()
        return ServiceJob(id=row["id"], state=row["state"], queued=bool(row["queued"]))

    def get_job(self, job_id: str) -> JobInfo:
        """One job by id: its progress while it runs, how it ended once it has."""
        rows = self.store.run("jobs/job_by_id", {"id": job_id})
        if not rows:
            raise NotFoundError(f"no job {job_id!r}", hint="queue_targets and generate_proposals return job ids")
        row = to_plain(rows[0])
        return JobInfo(
            **{
                **row,
                "result": json.loads(row["result"]) if row["result"] else None,
                "progress": json.loads(row["progress"]) if row["progress"] else None,
            }
        )

    def stop(self, task_id: str, *, immediate: bool) -> tuple[int, int]:
        """Cancel the task's queued jobs; ask running ones to cancel when ``immediate``. Returns the counts."""
        validate_task_id(task_id)
        self.tasks.get(task_id)
        row = self.store.run("jobs/stop_task_jobs", {"task_id": task_id, "immediate": immediate})[0]
        return int(row["cancelled"]), int(row["running"])


# ----------------------------------------------------------------------------- workers
def default_worker_name() -> str:
    """``<host>-<pid>-<random>``: which machine and process ran a job, unique even when a pid is reused."""
    host = "".join(c if c.isalnum() or c in "-." else "-" for c in socket.gethostname())[:60] or "host"
    return f"{host}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class WorkerPool:
    """Threads that take queued jobs from Neo4j and run them with ``executor``."""

    def __init__(
        self,
        store: GraphStore,
        executor: JobExecutor,
        *,
        workers: int = 1,
        poll_seconds: float = 1.0,
        heartbeat_seconds: float = 5.0,
        stale_seconds: float = 30.0,
        max_attempts: int = 3,
        name: str | None = None,
    ) -> None:
        self.store = store
        self.executor = executor
        self.workers = workers
        self.poll_seconds = poll_seconds
        self.heartbeat_seconds = heartbeat_seconds
        self.stale_seconds = stale_seconds
        self.max_attempts = max_attempts
        self.name = name or default_worker_name()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self._running: dict[str, JobContext] = {}
        self._lock = threading.Lock()
        # called after a task's job ended (done, failed or cancelled; not parked): (job, state, seconds it ran).
        # The composition root records the run and snapshots the claims it moved (lyra.services.timeline).
        self.on_finished: Callable[[ClaimedJob, str, float], None] | None = None

    # lifecycle
    def start(self) -> None:
        if self._threads:
            return
        self._stop.clear()
        for i in range(self.workers):
            thread = threading.Thread(target=self._work_loop, name=f"lyra-worker-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)
        beat = threading.Thread(target=self._heartbeat_loop, name="lyra-heartbeat", daemon=True)
        beat.start()
        self._threads.append(beat)
        log.info("worker pool %s started with %d worker(s)", self.name, self.workers)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop taking jobs and wait for running ones; what does not finish in time is resumed by the next start."""
        self._stop.set()
        self._wake.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads.clear()

    def wake(self) -> None:
        self._wake.set()

    @property
    def running_jobs(self) -> list[str]:
        """Ids of the jobs this pool is running now."""
        with self._lock:
            return [ctx.job.id for ctx in self._running.values()]

    # loops
    def _work_loop(self) -> None:
        while not self._stop.is_set():
            try:
                job = self._claim()
            except LyraError as exc:
                log.warning("worker could not take a job: %s", exc.message)
                job = None
            if job is None:
                self._wake.wait(self.poll_seconds)
                self._wake.clear()
                continue
            self._run(job)

    def _claim(self) -> ClaimedJob | None:
        """The next queued job, or None when the queue is empty. When another worker wins the oldest job first,
        the next one is tried at once (up to ``CLAIM_TRIES`` times, then the worker waits for its next poll)."""
        for _ in range(CLAIM_TRIES):
            claim = new_id("claim")
            rows = self.store.run(
                "jobs/claim_next_job", {"worker": self.name, "claim": claim, "max_attempts": self.max_attempts}
            )
            if not rows:
                return None
            row = rows[0]
            if not row["won"]:
                continue
            return ClaimedJob(
                id=row["id"],
                task_id=row["task_id"] or "",
                kind=row["kind"],
                value=row["value"],
                options=json.loads(row["options"] or "{}"),
                attempts=row["attempts"],
                claim=claim,
            )
        return None

    def _run(self, job: ClaimedJob) -> None:
        ctx = JobContext(job, _sink=lambda progress: self._save_progress(job, progress))
        with self._lock:
            self._running[job.claim] = ctx
        state, error, result, pages = "done", None, None, 0
        park: Park | None = None
        log.info("job %s (%s %s) started, attempt %d", job.id, job.kind, job.value, job.attempts)
        running = current_job.set(job.id)
        try:
            outcome = self.executor(job, ctx)
            result, pages, park = outcome.result, outcome.pages, outcome.park
        except GraphUnavailableError as exc:
            # Neo4j went away mid-job (a restart, a crash): the job did not fail, and recording it as failed once
            # Neo4j is back would end it for good. Its heartbeat stops here, so it is requeued after stale_seconds
            # like the job of a dead server, within max_attempts; its writes are idempotent.
            log.warning("job %s interrupted, resumed once Neo4j answers again: %s", job.id, exc.message)
            return
        except JobCancelled as exc:
            state, error = "cancelled", exc.message
        except LyraError as exc:
            state, error, result = "failed", f"{exc.code}: {exc.message}", exc.job_result
        except Exception as exc:  # a bug must not kill the worker thread; the job records it
            log.exception("job %s crashed", job.id)
            state, error = "failed", f"internal_error: {type(exc).__name__}: {exc}"
        finally:
            current_job.reset(running)
            with self._lock:
                self._running.pop(job.claim, None)
        if park is not None:
            self._park(job, park, result, ctx.elapsed)
            return
        try:
            self.store.run(
                "jobs/finish_job",
                {
                    "id": job.id,
                    "claim": job.claim,
                    "state": state,
                    "error": error,
                    "result": json.dumps(result) if result is not None else None,
                    "pages": pages,
                    "seconds": round(ctx.elapsed, 3),
                },
            )
        except LyraError as exc:  # the heartbeat stops, so the job is re-queued later: nothing is lost
            log.error("could not record the end of job %s: %s", job.id, exc.message)
            return
        log.info("job %s %s%s", job.id, state, f": {error}" if error else "")
        if self.on_finished is not None and job.task_id:
            try:
                self.on_finished(job, state, ctx.elapsed)
            except Exception:  # the job's end is recorded; what follows it must not kill the worker thread
                log.exception("after job %s", job.id)

    def _save_progress(self, job: ClaimedJob, progress: dict[str, Any]) -> None:
        """Keep a running job's progress on its node (matched by this run's claim; also a heartbeat)."""
        try:
            rows = self.store.run(
                "jobs/set_job_progress", {"id": job.id, "claim": job.claim, "progress": json.dumps(progress)}
            )
        except GraphUnavailableError:
            raise  # the run stops and is resumed like any run that lost Neo4j
        except LyraError as exc:  # progress is for people watching: the job goes on without it
            log.warning("could not record the progress of job %s: %s", job.id, exc.message)
            return
        if rows and rows[0]["cancel_requested"]:
            with self._lock:
                ctx = self._running.get(job.claim)
            if ctx is not None:
                ctx.cancel()

    def _park(self, job: ClaimedJob, park: Park, result: dict[str, Any] | None, seconds: float) -> None:
        """The job waits for a person: with its own intervention item (it met a wall) or held for a paused domain."""
        common = {"id": job.id, "claim": job.claim, "error": park.error, "seconds": round(seconds, 3)}
        try:
            if park.kind is None:
                rows = self.store.run("interventions/hold_job", {**common, "domain": park.domain})
            else:
                rows = self.store.run(
                    "interventions/park_job",
                    {
                        **common,
                        "new_id": new_id("iv"),
                        "url": park.url,
                        "domain": park.domain,
                        "kind": park.kind,
                        "reason": park.reason,
                        "result": json.dumps(result) if result is not None else None,
                    },
                )
        except LyraError as exc:  # the heartbeat stops, so the job is re-queued later: nothing is lost
            log.error("could not park job %s: %s", job.id, exc.message)
            return
        state = rows[0]["job_state"] if rows else "lost (requeued meanwhile)"
        if state == "queued":
            self._wake.set()  # the domain was unpaused meanwhile: run it again
        log.info("job %s %s: %s", job.id, state, park.error)

    def _heartbeat_loop(self) -> None:
        last_requeue = 0.0
        while not self._stop.wait(self.heartbeat_seconds if self._running else min(self.heartbeat_seconds, 1.0)):
            try:
                with self._lock:
                    running = {ctx.job.id: ctx for ctx in self._running.values()}
                if running:
                    beats = [{"id": job_id, "claim": ctx.job.claim} for job_id, ctx in running.items()]
                    for row in self.store.run("jobs/heartbeat_jobs", {"rows": beats}):
                        if row["cancel_requested"]:
                            running[row["id"]].cancel()
                if time.monotonic() - last_requeue >= self.heartbeat_seconds:
                    last_requeue = time.monotonic()
                    self.requeue_stale()
            except LyraError as exc:
                log.warning("heartbeat failed: %s", exc.message)

    def requeue_stale(self) -> int:
        """Put jobs of dead workers back in the queue (or fail them after max_attempts)."""
        rows = self.store.run(
            "jobs/requeue_stale_jobs",
            {"stale_seconds": int(self.stale_seconds), "max_attempts": self.max_attempts, "token": new_id("requeue")},
        )
        for row in rows:
            log.warning("job %s was interrupted (its worker stopped); now %s", row["id"], row["state"])
        if any(r["state"] == "queued" for r in rows):
            self._wake.set()
        return len(rows)
