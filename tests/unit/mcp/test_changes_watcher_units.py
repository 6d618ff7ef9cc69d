"""The MCP changes watcher's bookkeeping (lyra/mcp/changes.py) against a FAKE run source: an in-memory list of
numbered runs per task standing in for Neo4j's cypher/timeline/runs_after (the real statement and a real `lyra mcp`
process are exercised in tests/integration/mcp/test_mcp_changes_across_processes.py). Checked here: the baseline
(runs before a task's first listener are never announced), one announcement per new run that moved claims, none
for a run that moved nothing or for a task nobody listens to, a run that commits after a later-polled one is still
announced when it carries a higher number, a failed poll keeps the marks, and the thread's life."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping

import pytest
from pydantic import ValidationError

from lyra.core.settings import load_settings
from lyra.mcp.changes import ChangesWatcher
from lyra.mcp.server import _listened_tasks
from lyra.models.timeline import NumberedRun, RunsAfter


class FakeRuns:
    """A fake of Neo4j's runs: per task its numbered runs, answering like cypher/timeline/runs_after."""

    def __init__(self) -> None:
        self.runs: dict[str, list[NumberedRun]] = {}
        self.asked: list[dict[str, int | None]] = []
        self.fail = False

    def record(self, task_id: str, moved: int = 1) -> str:
        runs = self.runs.setdefault(task_id, [])
        run = NumberedRun(run_id=f"run_{task_id}_{len(runs) + 1}", seq=len(runs) + 1, claims_moved=moved)
        runs.append(run)
        return run.run_id

    def __call__(self, marks: Mapping[str, int | None]) -> list[RunsAfter]:
        self.asked.append(dict(marks))
        if self.fail:
            raise ConnectionError("Neo4j is unreachable")
        answer = []
        for task_id, after in marks.items():
            runs = self.runs.get(task_id, [])
            newer = [] if after is None else [r for r in runs if r.seq > after]
            answer.append(RunsAfter(task_id=task_id, latest=len(runs), runs=newer))
        return answer


@pytest.fixture
def fake() -> FakeRuns:
    return FakeRuns()


def watcher_over(fake: FakeRuns, heard: list[str], poll_seconds: float = 3600.0) -> ChangesWatcher:
    return ChangesWatcher(fake, heard.append, poll_seconds)


def test_runs_before_the_first_listener_are_not_announced_and_each_new_run_is_announced_once(fake: FakeRuns) -> None:
    heard: list[str] = []
    fake.record("a")
    fake.record("a")
    watcher = watcher_over(fake, heard)
    try:
        watcher.watch(["a"])
        assert watcher.watched() == {"a": 2} and fake.asked == [{"a": None}]
        assert watcher.poll_once() == 0 and heard == []
        fake.record("a")
        fake.record("a", moved=0)  # moved nothing: passed, not announced
        fake.record("a")
        assert watcher.poll_once() == 2 and heard == ["a", "a"]
        assert watcher.poll_once() == 0 and heard == ["a", "a"]  # no run announced twice
        assert watcher.watched() == {"a": 5} and fake.asked[-1] == {"a": 5}
    finally:
        watcher.close()


def test_only_the_tasks_listened_to_are_asked_about_and_announced(fake: FakeRuns) -> None:
    heard: list[str] = []
    watcher = watcher_over(fake, heard)
    try:
        watcher.watch(["a"])
        fake.record("b")
        fake.record("a")
        watcher.poll_once()
        assert heard == ["a"] and all(set(asked) == {"a"} for asked in fake.asked)
        # a second stream on a, then b: a keeps its mark, b gets its baseline (its run before is not announced)
        watcher.watch(["a", "b"])
        assert watcher.watched() == {"a": 1, "b": 1}
        watcher.unwatch(["a"])  # one stream on a is still open
        fake.record("a")
        fake.record("b")
        watcher.poll_once()
        assert heard == ["a", "a", "b"]
        watcher.unwatch(["a", "b"])
        assert watcher.watched() == {}
        fake.record("a")
        assert watcher.poll_once() == 0 and heard == ["a", "a", "b"]
    finally:
        watcher.close()


def test_a_run_committed_late_is_still_announced(fake: FakeRuns) -> None:
    """Numbers follow commit order (cypher/timeline/record_run), so a run that commits after the poll that passed
    its neighbours carries a number above the mark; the fake shows a run appearing only at the second poll."""
    heard: list[str] = []
    fake.record("a")
    watcher = watcher_over(fake, heard)
    try:
        watcher.watch(["a"])
        fake.record("a")
        watcher.poll_once()
        fake.record("a")  # committed after the poll above: numbered 3 > mark 2
        watcher.poll_once()
        assert heard == ["a", "a"] and watcher.watched() == {"a": 3}
    finally:
        watcher.close()


def test_a_failed_poll_keeps_the_marks_and_the_next_tick_catches_up(
    fake: FakeRuns, caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[str] = []
    watcher = watcher_over(fake, heard, poll_seconds=0.05)
    try:
        fake.fail = True
        with caplog.at_level(logging.WARNING, logger="lyra.mcp.changes"):
            watcher.watch(["a"])  # no baseline: logged, taken at the next good tick
            assert watcher.watched() == {"a": None}
            deadline = time.monotonic() + 5
            while "poll failed" not in caplog.text and time.monotonic() < deadline:
                time.sleep(0.02)
        assert "no baseline" in caplog.text and "poll failed" in caplog.text and "unreachable" in caplog.text
        assert watcher.running()  # the thread survived the failures
        fake.fail = False
        while watcher.watched() != {"a": 0} and time.monotonic() < deadline:
            time.sleep(0.02)
        assert watcher.watched() == {"a": 0}
        fake.record("a")
        while not heard and time.monotonic() < deadline:
            time.sleep(0.02)
        assert heard == ["a"]
    finally:
        watcher.close()


def test_a_task_made_again_starts_its_numbers_over(fake: FakeRuns) -> None:
    heard: list[str] = []
    fake.record("a")
    fake.record("a")
    watcher = watcher_over(fake, heard)
    try:
        watcher.watch(["a"])
        fake.runs["a"] = []  # deleted and created again: its counter restarts
        watcher.poll_once()
        assert watcher.watched() == {"a": 0}
        fake.record("a")
        watcher.poll_once()
        assert heard == ["a"]
    finally:
        watcher.close()


def test_the_thread_runs_only_while_someone_listens(fake: FakeRuns) -> None:
    watcher = watcher_over(fake, [], poll_seconds=0.05)
    before = {t.ident for t in threading.enumerate()}
    assert not watcher.running()
    watcher.watch(["a"])
    assert watcher.running()
    (thread,) = [t for t in threading.enumerate() if t.ident not in before]
    assert thread.daemon and thread.name == "lyra-mcp-changes"
    watcher.unwatch(["a"])
    thread.join(timeout=5)
    assert not thread.is_alive() and not watcher.running()
    asked = len(fake.asked)
    time.sleep(0.2)
    assert len(fake.asked) == asked  # no polling with nobody listening
    watcher.watch(["a"])
    assert watcher.running()
    watcher.close()
    assert not watcher.running()
    watcher.watch(["a"])  # closed for good
    assert not watcher.running() and watcher.watched() == {}


def test_the_poll_interval_must_be_positive(fake: FakeRuns) -> None:
    with pytest.raises(ValueError, match="poll_seconds"):
        ChangesWatcher(fake, print, 0)


def test_a_listen_request_names_the_tasks_of_the_changes_resources_it_lists() -> None:
    uris = ["lyra://tasks/t1/changes", "lyra://tasks/t2/changes", "lyra://tasks/t1/changes", "lyra://other", 5]
    assert _listened_tasks({"notifications": {"resourceSubscriptions": uris}}) == ["t1", "t2"]
    assert _listened_tasks({"notifications": {"toolsListChanged": True}}) == []
    assert _listened_tasks(None) == [] and _listened_tasks({"notifications": "x"}) == []
    assert _listened_tasks({"notifications": {"resourceSubscriptions": ["lyra://tasks/a/b/changes"]}}) == []


@pytest.mark.parametrize("bad", [0, 0.05, 61, float("inf")])
def test_the_poll_setting_is_bounded(bad: float) -> None:
    with pytest.raises(ValidationError, match="mcp_changes_poll_seconds"):
        load_settings(mcp_changes_poll_seconds=bad)
    assert load_settings().api.mcp_changes_poll_seconds == 2.0
