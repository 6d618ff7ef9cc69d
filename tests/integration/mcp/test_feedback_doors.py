"""A correction names the door it came through. `feedback` edge_correct is a person's verdict on every door, but over
MCP the assistant sends it on its user's behalf: the feedback record and the edge's Judgment say `mcp`, `rest` or
`cli`, and a deployment that takes a person's verdict only where the person can be named refuses it over MCP
(LYRA_JUDGING_MCP_EDGE_CORRECT=refuse) while REST and the CLI still take it."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.types import Implementation

from lyra.bootstrap import Services, build_http_app, build_services
from lyra.mcp.server import create_mcp_server
from tests.support.helpers import neo4j_env, run_lyra, seed_task

pytestmark = pytest.mark.neo4j

TASK = "fb_doors"


def seed(services: Services) -> list[str]:
    claim_id = seed_task(services, TASK, ["Zinc shortens colds."])[0]
    pages = services.evidence.upsert_pages([{"url": f"https://doors.invalid/{i}"} for i in range(4)]).ids
    services.evidence.record_task_reads(TASK, pages, "test")
    fragments = services.evidence.upsert_fragments(
        [{"page_id": p, "text": f"Trial {i}: zinc lozenges and cold duration."} for i, p in enumerate(pages)]
    ).ids
    return services.evidence.create_stance_edges(
        [{"fragment_id": f, "claim_id": claim_id, "relation": "NEUTRAL", "nli_confidence": 0.4} for f in fragments]
    ).ids


def correction(edge_id: str) -> dict[str, Any]:
    return {"edge_id": edge_id, "correct_relation": "supports", "reason": "the trial reports shorter colds"}


def records(services: Services, edge_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The feedback record and the Judgment a correction of ``edge_id`` left."""
    event = services.store.driver.execute_query(
        "MATCH (e:FeedbackEvent {task_id: $task, action: 'edge_correct'}) WHERE e.args CONTAINS $edge "
        "RETURN e.door AS door, e.reviewer_id AS reviewer_id",
        {"task": TASK, "edge": edge_id},
        database_=services.store.database,
    ).records
    judgment = services.store.driver.execute_query(
        "MATCH (j:Judgment {edge_id: $edge, instructions_version: 'feedback'}) RETURN j.door AS door, j.judge AS judge",
        {"edge": edge_id},
        database_=services.store.database,
    ).records
    assert len(event) == 1 and len(judgment) == 1, (event, judgment)
    return dict(event[0]), dict(judgment[0])


def call_mcp(services: Services, edge_id: str) -> tuple[bool, str]:
    server = create_mcp_server(services.operations)

    async def run() -> tuple[bool, str]:
        async with Client(server, client_info=Implementation(name="door-test", version="1")) as client:
            args = {"task_id": TASK, "action": "edge_correct", "args": correction(edge_id)}
            result = await client.call_tool("feedback", args)
            text = result.content[0].text if result.content and hasattr(result.content[0], "text") else ""
            return result.is_error, text

    return anyio.run(run)


def test_each_door_is_named_on_the_correction_it_sent(graph: Services) -> None:
    mcp_edge, rest_edge, cli_edge, python_edge = seed(graph)
    failed, text = call_mcp(graph, mcp_edge)
    assert not failed, text

    app = build_http_app(graph, workers=False, mcp=False)

    async def post() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            body = {"action": "edge_correct", "args": correction(rest_edge), "reviewer_id": "ana"}
            return await client.post(f"/api/v1/tasks/{TASK}/feedback", json=body)

    response = anyio.run(post)
    assert response.status_code == 200, response.text

    shown = run_lyra(
        "feedback",
        TASK,
        "edge_correct",
        "--arg",
        f"edge_id={cli_edge}",
        "--arg",
        "correct_relation=supports",
        "--reviewer",
        "ben",
        env=neo4j_env(graph.settings),
    )
    assert shown.returncode == 0, shown.stderr

    from lyra.models.trust import FeedbackRequest

    graph.operations.feedback(FeedbackRequest(task_id=TASK, action="edge_correct", args=correction(python_edge)))

    assert records(graph, mcp_edge) == (
        {"door": "mcp", "reviewer_id": "mcp:door-test"},
        {"door": "mcp", "judge": "human:mcp:door-test"},
    )
    assert records(graph, rest_edge) == ({"door": "rest", "reviewer_id": "ana"}, {"door": "rest", "judge": "human:ana"})
    assert records(graph, cli_edge) == ({"door": "cli", "reviewer_id": "ben"}, {"door": "cli", "judge": "human:ben"})
    assert records(graph, python_edge) == (
        {"door": None, "reviewer_id": None},
        {"door": None, "judge": "human:anonymous"},
    )


def test_a_deployment_can_refuse_a_persons_verdict_over_mcp(graph: Services) -> None:
    mcp_edge, rest_edge, *_ = seed(graph)
    strict = build_services(
        graph.settings.model_copy(update={"judging_mcp_edge_correct": "refuse"}), apply_schema=False
    )
    try:
        failed, text = call_mcp(strict, mcp_edge)
        assert failed
        error = json.loads(text[text.index("{") :])  # the SDK puts "Error executing tool feedback: " first
        assert error["error"] == "conflict" and "submit_judgments" in error["hint"]
        untouched = strict.store.driver.execute_query(
            "MATCH ()-[r {id: $id}]->() RETURN type(r) AS type, r.judge AS judge",
            {"id": mcp_edge},
            database_=strict.store.database,
        ).records
        assert [dict(r) for r in untouched] == [{"type": "NEUTRAL", "judge": "offline:import"}]
        nothing = strict.store.driver.execute_query(
            "MATCH (e:FeedbackEvent {task_id: $task}) RETURN count(e) AS n",
            {"task": TASK},
            database_=strict.store.database,
        ).records
        assert nothing[0]["n"] == 0

        app = build_http_app(strict, workers=False, mcp=False)

        async def post() -> httpx.Response:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
                body = {"action": "edge_correct", "args": correction(rest_edge)}
                return await client.post(f"/api/v1/tasks/{TASK}/feedback", json=body)

        response = anyio.run(post)
        assert response.status_code == 200, response.text
        assert records(strict, rest_edge)[0]["door"] == "rest"
    finally:
        strict.close()
