"""The changes watcher: ``notifications/resources/updated`` of ``lyra://tasks/{task_id}/changes`` for runs recorded
by any process (docs/concepts/living-evidence.md).

A run is recorded wherever its work ran: a ``lyra serve`` worker, a CLI ``lyra refresh``, another MCP process, this
one. While at least one client listens to a task's changes resource, :class:`ChangesWatcher` asks Neo4j every
``LYRA_MCP_CHANGES_POLL_SECONDS`` for the task's runs numbered above its high-water mark (cypher/timeline/runs_after)
and announces each new run that moved claims once. Run numbers follow commit order within a task
(cypher/timeline/record_run takes the task's write lock before it numbers a run), so a mark never passes a run that
commits late; the same poll serves runs of this process, so there is one path and nothing to deduplicate.

The watcher's thread starts with the first listener and ends when the last one goes (or with :meth:`close`): a
daemon thread waiting on an event between polls. A failed poll (Neo4j down, a timeout) is logged and tried again
at the next tick with the same marks, so nothing is skipped and the server keeps serving.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Collection, Mapping

from lyra.models.timeline import RunsAfter

log = logging.getLogger(__name__)

RunSource = Callable[[Mapping[str, int | None]], list[RunsAfter]]


class ChangesWatcher:
    """Polls ``source`` for the runs of the tasks listened to and calls ``announce(task_id)`` once per new run of
    theirs that moved claims."""

    def __init__(self, source: RunSource, announce: Callable[[str], None], poll_seconds: float) -> None:
        if poll_seconds <= 0:
            raise ValueError("poll_seconds must be above 0")
        self._source = source
        self._announce = announce
        self.poll_seconds = poll_seconds
        self._lock = threading.Lock()
        self._listeners: Counter[str] = Counter()  # task id -> open listen streams on its changes resource
        self._marks: dict[str, int | None] = {}  # task id -> the highest run number passed (None: no baseline yet)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._closed = False

    # ------------------------------------------------------------------ listeners
    def watch(self, task_ids: Collection[str]) -> None:
        """A listen stream opens on these tasks' resources: the tasks new to the watcher get their baseline (their
        run counter now: runs up to it are not announced) and the thread starts if it was not running. Blocks for
        one query; a failed baseline is logged and taken at the next tick."""
        with self._lock:
            if self._closed:
                return
            new = [t for t in dict.fromkeys(task_ids) if self._listeners[t] == 0]
            self._listeners.update(task_ids)
            for task_id in new:
                self._marks[task_id] = None
        if new:
            self._baseline(new)
        self._ensure_thread()

    def unwatch(self, task_ids: Collection[str]) -> None:
        """A listen stream closed: the tasks nobody listens to any more are dropped; with none left the thread
        stops."""
        with self._lock:
            self._listeners.subtract(task_ids)
            for task_id in set(task_ids):
                if self._listeners[task_id] <= 0:
                    del self._listeners[task_id]
                    self._marks.pop(task_id, None)
            if not self._listeners:
                self._stop.set()
                self._thread = None

    def watched(self) -> dict[str, int | None]:
        """The tasks watched and their marks (a copy)."""
        with self._lock:
            return dict(self._marks)

    def running(self) -> bool:
        with self._lock:
            return self._thread is not None and self._thread.is_alive()

    def close(self) -> None:
        """Stop for good (the server is going): the thread ends at once, later listeners start nothing."""
        with self._lock:
            self._closed = True
            self._listeners.clear()
            self._marks.clear()
            self._stop.set()
            thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    # ------------------------------------------------------------------ polling
    def _baseline(self, task_ids: list[str]) -> None:
        try:
            found = self._source(dict.fromkeys(task_ids))
        except Exception as exc:
            log.warning(
                "changes watcher: no baseline for %d task(s) yet (%s); trying at the next tick", len(task_ids), exc
            )
            return
        self._apply(found, baseline=set(task_ids))

    def poll_once(self) -> int:
        """One tick: ask for every watched task's runs above its mark and announce the new ones that moved claims.
        Returns how many announcements were made. Raises what the source raises (the loop logs it)."""
        marks = self.watched()
        if not marks:
            return 0
        found = self._source(marks)
        return self._apply(found, baseline={t for t, m in marks.items() if m is None})

    def _apply(self, found: list[RunsAfter], baseline: set[str]) -> int:
        announced = 0
        for task in found:
            with self._lock:
                if task.task_id not in self._marks:
                    continue  # nobody listens any more
                mark = self._marks[task.task_id]
                if mark is None or task.task_id in baseline:
                    if mark is None:  # not set meanwhile by another poll
                        self._marks[task.task_id] = task.latest
                    continue
                fresh = [run for run in task.runs if run.seq > mark]
                if fresh:
                    self._marks[task.task_id] = max(run.seq for run in fresh)
                elif task.latest < mark:
                    # the counter went back: the task was deleted and made again; its runs all count as new
                    self._marks[task.task_id] = 0
            for run in fresh:
                if run.claims_moved > 0:
                    self._announce(task.task_id)
                    announced += 1
        return announced

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._closed or not self._listeners or (self._thread is not None and self._thread.is_alive()):
                return
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._loop, args=(self._stop,), name="lyra-mcp-changes", daemon=True)
            self._thread.start()

    def _loop(self, stop: threading.Event) -> None:
        while not stop.wait(self.poll_seconds):
            try:
                self.poll_once()
            except Exception as exc:  # Neo4j down or slow: the same marks are asked again at the next tick
                log.warning(
                    "changes watcher: poll failed (%s: %s); retrying in %gs", type(exc).__name__, exc, self.poll_seconds
                )


__all__ = ["ChangesWatcher", "RunSource"]
