"""A question is never judged as a claim, on every door over the real Neo4j: create_task through
MCP (the SDK's in-memory client), REST (httpx's ASGI transport) and the operations the CLI calls; `lyra research`'s
start (a question with --claim statements); `lyra ingest`; and the CLI refusing a question as a claim by name.

The models are real where a document is judged (the offline embedder and stance judge)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from lyra.bootstrap import Services, build_http_app
from lyra.core.errors import InvalidInputError
from lyra.core.settings import Settings
from lyra.mcp.server import create_mcp_server
from lyra.models.api import CreateTaskRequest, TaskConfig
from lyra.models.ingest import IngestRequest, ResearchRequest
from tests.support.helpers import neo4j_env, run_lyra

pytestmark = pytest.mark.neo4j
QUESTION = "Does access to microcredit increase household consumption?"
CLAIM = "Access to microcredit increases household consumption"
PASSAGE = (
    "In a randomized evaluation across 104 villages, households given access to microcredit raised their monthly "
    "consumption by 6 percent within two years compared with households in control villages."
)


def task_claims(graph: Services, task_id: str) -> list[str]:
    return [r["text"] for r in graph.store.run("tasks/task_claims", {"task_id": task_id})]


def mcp_call(services: Services, name: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    """(is_error, structured content or the parsed error object) from the MCP server's in-memory client."""
    server = create_mcp_server(services.operations)

    async def run() -> tuple[bool, Any]:
        async with Client(server) as client:
            result = await client.call_tool(name, arguments)
            if result.is_error:
                text = result.content[0].text  # type: ignore[union-attr]
                return True, json.loads(text[text.index("{") :])
            return False, result.structured_content

    return anyio.run(run)


def rest_post(services: Services, path: str, body: dict[str, Any]) -> httpx.Response:
    app = build_http_app(services, workers=False, mcp=False)

    async def run() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            return await client.post(path, json=body)

    return anyio.run(run)


def test_a_question_as_hypothesis_without_claims_is_refused_naming_config_claims_on_every_door(
    graph: Services,
) -> None:
    error, out = mcp_call(graph, "create_task", {"hypothesis": QUESTION, "config": {"task_id": "mc_mcp"}})
    assert error and out["error"] == "invalid_input" and out["field"] == "config.claims"
    assert "a question is never judged" in out["message"]
    response = rest_post(graph, "/api/v1/tasks", {"hypothesis": QUESTION, "config": {"task_id": "mc_rest"}})
    assert response.status_code == 422 and response.json()["field"] == "config.claims"
    with pytest.raises(InvalidInputError) as caught:
        graph.operations.create_task(CreateTaskRequest(hypothesis=QUESTION, config=TaskConfig(task_id="mc_ops")))
    assert caught.value.field == "config.claims"
    assert not any(graph.operations.task_exists(t) for t in ("mc_mcp", "mc_rest", "mc_ops"))  # nothing written


def test_a_question_given_as_a_claim_is_refused_naming_the_field_on_mcp_and_rest(graph: Services) -> None:
    body = {"hypothesis": CLAIM, "config": {"task_id": "mc_claims", "claims": ["Microcredit helps", QUESTION]}}
    error, out = mcp_call(graph, "create_task", body)
    assert error and out["field"] == "config.claims[1]" and "is a question, not a claim" in out["message"]
    response = rest_post(graph, "/api/v1/tasks", body)
    assert response.status_code == 422 and response.json()["field"] == "config.claims[1]"
    assert not graph.operations.task_exists("mc_claims")


def test_a_question_hypothesis_names_the_task_and_only_its_claims_are_judged(graph: Services) -> None:
    error, out = mcp_call(
        graph, "create_task", {"hypothesis": QUESTION, "config": {"task_id": "mc_named", "claims": [CLAIM]}}
    )
    assert not error and len(out["claim_ids"]) == 1
    assert out["notes"] and "not judged" in out["notes"][0]
    assert task_claims(graph, "mc_named") == [CLAIM]
    response = rest_post(graph, "/api/v1/tasks", {"hypothesis": QUESTION, "config": {"claims": [CLAIM]}})
    assert response.status_code == 201
    assert task_claims(graph, response.json()["task_id"]) == [CLAIM]


def test_research_on_a_question_judges_its_claims_and_never_the_question(graph: Services, tmp_path: Path) -> None:
    (tmp_path / "village.txt").write_text(PASSAGE, encoding="utf-8")
    request = ResearchRequest(question=QUESTION, claims=[CLAIM], corpus=[tmp_path], task_id="mc_research")
    start = graph.operations.start_research(request)
    assert (start.created, start.question, start.claims_from, start.claims) == (True, True, "given", [CLAIM])
    report = graph.operations.ingest(IngestRequest(task_id="mc_research", paths=[tmp_path]))
    assert report.pairs_judged >= 1 and len(report.claims) == 1
    assert task_claims(graph, "mc_research") == [CLAIM]
    (task,) = [t for t in graph.operations.list_tasks().tasks if t.id == "mc_research"]
    assert task.hypothesis == QUESTION  # the question names the task

    # continued: the claim it holds is not added again, and no LLM is asked for more
    again = graph.operations.start_research(ResearchRequest(question=QUESTION, task_id="mc_research"))
    assert (again.created, again.claims_from, again.claims_added) == (False, "existing", [])
    assert task_claims(graph, "mc_research") == [CLAIM]


def test_ingest_with_a_question_as_hypothesis_creates_a_task_whose_claims_are_the_given_ones(
    graph: Services, tmp_path: Path
) -> None:
    (tmp_path / "village.txt").write_text(PASSAGE, encoding="utf-8")
    with pytest.raises(InvalidInputError) as caught:
        graph.operations.ingest(IngestRequest(task_id="mc_ingest", paths=[tmp_path], hypothesis=QUESTION))
    assert caught.value.field == "claims" and not graph.operations.task_exists("mc_ingest")
    graph.operations.ingest(IngestRequest(task_id="mc_ingest", paths=[tmp_path], hypothesis=QUESTION, claims=[CLAIM]))
    assert task_claims(graph, "mc_ingest") == [CLAIM]


def test_the_cli_refuses_a_question_as_a_claim_naming_the_field(graph: Services, settings: Settings) -> None:
    env = neo4j_env(settings)
    created = run_lyra("task", "create", "mc_cli", QUESTION, env=env)
    assert created.returncode == 2 and "config.claims" in created.stderr and "never judged" in created.stderr
    given = run_lyra("research", QUESTION, "--claim", "Is microcredit good?", "--no-web", "--no-academic", env=env)
    assert given.returncode == 2 and "claims[0]: is a question, not a claim" in given.stderr
    ingest = run_lyra("ingest", "/nonexistent", "--task", "mc_cli", "--claim", QUESTION, env=env)
    assert ingest.returncode == 2 and "claims[0]" in ingest.stderr
    created = run_lyra("task", "create", "mc_cli", QUESTION, "--claim", CLAIM, env=env)
    assert created.returncode == 0, created.stderr
    assert task_claims(graph, "mc_cli") == [CLAIM]
