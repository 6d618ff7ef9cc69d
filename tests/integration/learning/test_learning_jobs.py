"""The learning loop's proposal batch as a job: the REST route, the MCP tool and the CLI queue it and return its id at
once; a worker runs it, its
progress and result are read back by id (real Neo4j, the real embedder; proposals unmeasured: no LLM here)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from lyra.api.app import create_app
from lyra.bootstrap import Services, build_services
from lyra.core.settings import Settings
from lyra.mcp.server import create_mcp_server
from lyra.models.api import GetJobRequest, JobInfo
from lyra.models.learning import ListProposalsRequest
from tests.support.helpers import neo4j_env, run_lyra
from tests.support.learning import OVERCALLED, correct, seed

pytestmark = [pytest.mark.neo4j, pytest.mark.models]


@pytest.fixture
def learning(graph: Services, settings: Settings, tmp_path: Path) -> Iterator[Services]:
    svc = build_services(
        settings.model_copy(
            update={"state_dir": tmp_path / "state", "learning_min_evidence": 3, "job_poll_seconds": 0.1}
        ),
        apply_schema=False,
    )
    yield svc
    svc.close()


def rest(services: Services, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """One REST call through the app in process (no worker pool: a queued job stays queued)."""
    transport = httpx.ASGITransport(app=create_app(services.operations, services.settings.api))

    async def call() -> httpx.Response:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.request(method, path, **kwargs)

    return anyio.run(call)


def wait_ended(services: Services, job_id: str, timeout: float = 120.0) -> JobInfo:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = services.operations.get_job(GetJobRequest(id=job_id))
        if job.state not in ("queued", "running"):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not end in time")


def test_post_learning_proposals_returns_a_job_at_once_whose_progress_and_result_name_the_proposals(
    learning: Services, tmp_path: Path
) -> None:
    edges = seed(learning, tmp_path, "learn_jobs", OVERCALLED[:3], "SUPPORTS")
    for edge, reviewer in zip(edges, ["ana", "bo", "cy"], strict=True):
        correct(learning, "learn_jobs", edge, "neutral", reviewer)

    started = time.monotonic()
    queued = rest(learning, "POST", "/api/v1/learning/proposals", json={"measure": False})
    assert queued.status_code == 202, queued.text
    assert time.monotonic() - started < 10  # nothing is proposed in the request itself
    body = queued.json()
    assert body["state"] == "queued" and not body["already_queued"] and body["job_id"] in body["next_step"]
    job_id = body["job_id"]
    twice = rest(learning, "POST", "/api/v1/learning/proposals", json={"measure": False}).json()
    assert twice["job_id"] == job_id and twice["already_queued"]  # one batch at a time
    shown = rest(learning, "GET", f"/api/v1/jobs/{job_id}")
    assert shown.status_code == 200, shown.text
    assert {k: shown.json()[k] for k in ("state", "kind", "task_id")} == {
        "state": "queued",
        "kind": "learning_proposals",
        "task_id": None,
    }
    assert learning.operations.list_proposals(ListProposalsRequest()).proposals == []

    with learning.running_workers():
        job = wait_ended(learning, job_id)
    assert job.state == "done", job.error
    proposals = learning.operations.list_proposals(ListProposalsRequest()).proposals
    assert job.result is not None and sorted(job.result["created"]) == sorted(p.id for p in proposals)
    assert len(proposals) == 3  # the guideline, the few-shot example and the trained judge's examples
    assert job.progress is not None and job.progress["stage"] == "done"
    assert job.progress["steps_done"] == job.progress["steps"] and job.progress["created"] == 3

    again = rest(learning, "POST", "/api/v1/learning/proposals", json={"measure": False}).json()
    assert again["job_id"] != job_id and not again["already_queued"]  # the last batch ended: a new one
    assert rest(learning, "GET", f"/api/v1/jobs/{job_id}").json()["state"] == "done"
    assert rest(learning, "GET", "/api/v1/jobs/job_" + "0" * 32).status_code == 404
    assert rest(learning, "GET", "/api/v1/jobs/not-a-job").status_code == 422


def test_the_mcp_tool_queues_the_same_job_and_get_job_follows_it(learning: Services) -> None:
    server = create_mcp_server(learning.operations)

    async def run() -> tuple[Any, Any, Any]:
        async with Client(server) as client:
            queued = await client.call_tool("generate_proposals", {"measure": False})
            job = await client.call_tool("get_job", {"id": queued.structured_content["job_id"]})
            bad = await client.call_tool("get_job", {"id": "job_missing"})
            return queued, job, bad

    queued, job, bad = anyio.run(run)
    assert not queued.is_error and not job.is_error
    assert job.structured_content["id"] == queued.structured_content["job_id"]
    assert job.structured_content["kind"] == "learning_proposals" and job.structured_content["state"] == "queued"
    assert bad.is_error
    rest_view = rest(learning, "POST", "/api/v1/learning/proposals", json={"measure": False}).json()
    assert rest_view["job_id"] == queued.structured_content["job_id"] and rest_view["already_queued"]


def test_the_cli_queues_the_batch_or_runs_it_printing_its_progress_to_stderr(
    learning: Services, settings: Settings, tmp_path: Path
) -> None:
    env = {**neo4j_env(settings), "LYRA_STATE_DIR": str(tmp_path / "cli_state")}
    queued = run_lyra("learn", "propose", "--no-measure", "--no-wait", env=env)
    assert queued.returncode == 0, queued.stderr
    job_id = json.loads(queued.stdout)["job_id"]
    shown = run_lyra("learn", "job", job_id, env=env)
    assert shown.returncode == 0 and '"state": "queued"' in shown.stdout
    ran = run_lyra("learn", "propose", "--no-measure", env=env)  # runs the queued batch here and waits for it
    assert ran.returncode == 0, ran.stderr
    assert f"a batch is already queued: job {job_id}" in ran.stderr
    progress = [json.loads(line) for line in ran.stderr.splitlines() if line.startswith('{"stage"')]
    assert progress and progress[-1]["stage"] == "done"  # progress on stderr, one JSON line each; the job on stdout
    job = JobInfo.model_validate_json(ran.stdout)
    assert (job.id, job.state) == (job_id, "done")
    assert job.result is not None and job.result["created"] == []
    assert any("reviewed samples" in s for s in job.result["skipped"])
