"""The client hears about changes (docs/concepts/living-evidence.md): the official MCP SDK client, connected to
Lyra's MCP server, listens to ``lyra://tasks/{task_id}/changes`` (``subscriptions/listen``) and receives
``notifications/resources/updated`` for it when a run recorded by another thread (as a job worker does) moves the
task's claims; a run of another task, or one that moves nothing, sends nothing to it; reading the resource gives
get_changes of the task. Real Neo4j."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated

from lyra.bootstrap import Services
from lyra.mcp.server import changes_uri, create_mcp_server
from tests.support.helpers import seed_task

pytestmark = pytest.mark.neo4j
TASK = "heard_task"
OTHER = "unheard_task"


def test_a_listening_client_hears_when_a_run_moves_the_tasks_claims(graph: Services) -> None:
    seed_task(graph, TASK, ["the treatment lowers blood pressure"])
    seed_task(graph, OTHER, ["the treatment raises blood pressure"])
    server = create_mcp_server(graph.operations)
    uri = changes_uri(TASK)

    async def run() -> tuple[list[object], dict[str, object], list[object]]:
        received: list[object] = []
        async with Client(server) as client:
            async with client.listen(resource_subscriptions=[uri]) as subscription:
                assert list(subscription.honored.resource_subscriptions or []) == [uri]
                # another task's run: not for this listener
                await anyio.to_thread.run_sync(lambda: graph.timeline.record_run(OTHER, "ingest"))
                # this task's first run snapshots its claims: they moved
                run_id, moved = await anyio.to_thread.run_sync(lambda: graph.timeline.record_run(TASK, "ingest"))
                assert moved == 1
                with anyio.fail_after(15):
                    received.append(await subscription.__anext__())
                # nothing moved since: no notification
                _, again = await anyio.to_thread.run_sync(lambda: graph.timeline.record_run(TASK, "feedback"))
                assert again == 0
                late: list[object] = []
                with anyio.move_on_after(1.0):
                    late.append(await subscription.__anext__())
            read = await client.read_resource(uri)
            body = json.loads(read.contents[0].text)  # type: ignore[union-attr]
            assert body["runs"][0]["run_id"] != run_id  # the latest run is the feedback one
            return received, body, late

    received, body, late = anyio.run(run)
    assert received == [ResourceUpdated(uri=uri)]
    assert late == []
    assert body["task_id"] == TASK and [r["kind"] for r in body["runs"]] == ["feedback"]


def test_the_changes_resource_of_an_unknown_task_is_an_error(graph: Services) -> None:
    server = create_mcp_server(graph.operations)

    async def run() -> str:
        async with Client(server) as client:
            with pytest.raises(MCPError) as raised:
                await client.read_resource(changes_uri("no_such_task"))
            return str(raised.value)

    assert "no_such_task" in anyio.run(run)
