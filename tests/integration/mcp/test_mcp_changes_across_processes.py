"""The client hears about runs of other processes (docs/concepts/living-evidence.md): a real `lyra mcp` process over
stdio, the official SDK client listening to ``lyra://tasks/{task_id}/changes``, and runs recorded by this test
process (another process for the server, as a `lyra serve` worker or a CLI `lyra refresh` is): a run that moves
the task's claims is announced once, within a bounded wait; a run of another task, or one that moves nothing, is
not. Also the premise the watcher's high-water mark rests on: runs recorded at once number their task's runs
without a gap or a repeat. Real Neo4j."""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.subscriptions import ResourceUpdated

from lyra.bootstrap import Services
from lyra.mcp.server import changes_uri
from tests.support.helpers import ROOT, neo4j_env, seed_task

pytestmark = pytest.mark.neo4j
TASK = "watched_task"
OTHER = "unwatched_task"
POLL_SECONDS = 0.5
HEAR_WITHIN = 20.0  # the poll interval plus a loaded machine's query time, with a wide margin


def test_a_lyra_mcp_process_announces_runs_recorded_by_another_process(graph: Services, tmp_path: Path) -> None:
    seed_task(graph, TASK, ["the treatment lowers blood pressure", "the treatment is safe"])
    seed_task(graph, OTHER, ["the treatment raises blood pressure"])
    graph.timeline.record_run(TASK, "ingest")  # before anyone listens: never announced
    env = {
        **os.environ,
        **neo4j_env(graph.settings),
        "LYRA_STATE_DIR": str(tmp_path / "state"),
        "LYRA_MCP_CHANGES_POLL_SECONDS": str(POLL_SECONDS),
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "lyra", "mcp"], env=env, cwd=str(ROOT))
    uri = changes_uri(TASK)
    claim_ids = graph.tasks.add_claims(TASK, ["the treatment works in children"])

    async def run() -> tuple[list[object], list[object], float]:
        heard: list[object] = []
        async with Client(params) as client, client.listen(resource_subscriptions=[uri]) as subscription:
            assert list(subscription.honored.resource_subscriptions or []) == [uri]
            # another task's run moves its claim: not for this listener
            _, other_moved = await anyio.to_thread.run_sync(lambda: graph.timeline.record_run(OTHER, "refresh"))
            assert other_moved == 1
            # this task's run snapshots its new claim: it moved
            _, moved = await anyio.to_thread.run_sync(lambda: graph.timeline.record_run(TASK, "refresh"))
            assert moved == 1 and claim_ids
            recorded = time.monotonic()
            with anyio.fail_after(HEAR_WITHIN):
                heard.append(await subscription.__anext__())
            latency = time.monotonic() - recorded
            # a run that moves nothing: no notification, over several polls
            _, again = await anyio.to_thread.run_sync(lambda: graph.timeline.record_run(TASK, "feedback"))
            assert again == 0
            late: list[object] = []
            with anyio.move_on_after(POLL_SECONDS * 6):
                late.append(await subscription.__anext__())
            return heard, late, latency

    heard, late, latency = anyio.run(run)
    assert heard == [ResourceUpdated(uri=uri)]
    assert late == []
    print(f"notified {latency:.2f}s after the run was recorded (poll every {POLL_SECONDS}s)", file=sys.stderr)


def test_runs_recorded_at_once_number_their_task_without_gap_or_repeat(graph: Services) -> None:
    seed_task(graph, TASK, ["the treatment lowers blood pressure"])
    with ThreadPoolExecutor(max_workers=6) as pool:
        run_ids = list(pool.map(lambda _: graph.timeline.record_run(TASK, "feedback")[0], range(12)))
    rows = graph.store.run("timeline/runs_after", {"marks": [{"task_id": TASK, "after": 0}], "limit": 100})
    (row,) = rows
    assert sorted(r["run_id"] for r in row["runs"]) == sorted(run_ids)
    assert [r["seq"] for r in row["runs"]] == list(range(1, 13)) and row["latest"] == 12
    assert sum(r["claims_moved"] for r in row["runs"]) == 1  # only the first run snapshotted the claim
    baseline = graph.store.run("timeline/runs_after", {"marks": [{"task_id": TASK, "after": None}], "limit": 100})
    assert baseline == [{"task_id": TASK, "latest": 12, "runs": []}]
