"""Real processes, real models, real Neo4j: one `lyra mcp` stdio session driven by the SDK's stdio client, and
one `lyra serve` over HTTP (REST, MCP streamable HTTP, the report page in chromium) that is killed mid-job and
restarted: the interrupted job resumes and nothing is written twice."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from lyra.bootstrap import Services
from tests.support.helpers import ROOT, Served, free_port, neo4j_env

pytestmark = [pytest.mark.neo4j, pytest.mark.models]
CORPUS = ROOT / "config" / "examples" / "corpus"
CLAIM = "Microplastic particles are present in bottled drinking water at higher concentrations than in tap water."
MAX_WAIT = 900.0


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    folder = tmp_path / "sources"
    folder.mkdir()
    for name in ("microplastics_northgate_study.md", "microplastics_news.html", "microplastics_mixed_review.md"):
        shutil.copy(CORPUS / name, folder / name)
    return folder


def lyra_env(graph: Services, tmp_path: Path, sources: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        **neo4j_env(graph.settings),
        "LYRA_STATE_DIR": str(tmp_path / "state"),
        "LYRA_ALLOWED_ROOTS": str(sources),
        "LYRA_JOB_POLL_SECONDS": "0.2",
        "LYRA_JOB_HEARTBEAT_SECONDS": "0.5",
        **extra,
    }


def test_stdio_session_creates_queues_polls_and_gets_materials(graph: Services, tmp_path: Path, sources: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "lyra", "mcp"], env=lyra_env(graph, tmp_path, sources), cwd=str(ROOT)
    )

    async def session() -> dict[str, Any]:
        async with Client(params) as client:
            created = (await client.call_tool("create_task", {"hypothesis": CLAIM})).structured_content
            assert created is not None
            task_id = created["task_id"]
            queued = await client.call_tool(
                "queue_targets", {"task_id": task_id, "targets": [{"kind": "file", "value": str(sources)}]}
            )
            assert not queued.is_error and queued.structured_content["queued"] == 1  # type: ignore[index]
            deadline = time.monotonic() + MAX_WAIT
            status: dict[str, Any] = {}
            while time.monotonic() < deadline:
                result = await client.call_tool("get_status", {"task_id": task_id, "wait": 30})
                status = result.structured_content or {}
                if status["milestones"]["jobs_drained"]:
                    break
            materials = (await client.call_tool("get_materials", {"task_id": task_id})).structured_content
            search = await client.call_tool(
                "vector_search", {"query": "bottled water particles", "task_id": task_id, "kind": "both", "k": 5}
            )
            return {"status": status, "materials": materials, "search": search.structured_content}

    out = anyio.run(session)
    status, materials = out["status"], out["materials"]
    assert status["jobs"]["done"] == 1 and status["milestones"]["nli_results_stable"], status
    assert status["metrics"]["pages"] >= 1 and sum(status["metrics"]["edges"].values()) >= 1
    (claim,) = materials["claims"]
    assert claim["text"] == CLAIM and claim["evidence"]
    assert claim["evidence_count"] == claim["supports_count"] + claim["refutes_count"]
    kinds = {hit["kind"] for hit in out["search"]["hits"]}
    assert kinds == {"fragment", "claim"}


# ----------------------------------------------------------------------------- HTTP server
@pytest.fixture
def served(graph: Services, tmp_path: Path, sources: Path) -> Iterator[Served]:
    server = Served(lyra_env(graph, tmp_path, sources, LYRA_JOB_STALE_SECONDS="3"), free_port(), tmp_path / "serve.log")
    try:
        yield server
    finally:
        server.stop()


def poll(base: str, task_id: str, until: str) -> dict[str, Any]:
    deadline = time.monotonic() + MAX_WAIT
    while time.monotonic() < deadline:
        status = httpx.get(
            f"{base}/api/v1/tasks/{task_id}/status", params={"wait": 20, "detail": "full"}, timeout=60
        ).json()
        if until == "running" and status["jobs"]["running"]:
            return status
        if until == "drained" and status["milestones"]["jobs_drained"]:
            return status
    raise AssertionError(f"task {task_id} never reached {until}")


def test_http_server_resumes_an_interrupted_job_and_serves_rest_mcp_and_the_report(
    served: Served, graph: Services, tmp_path: Path, sources: Path
) -> None:
    served.start()
    base = served.base
    created = httpx.post(f"{base}/api/v1/tasks", json={"hypothesis": CLAIM, "config": {"task_id": "served_task"}})
    assert created.status_code == 201, created.text
    queued = httpx.post(
        f"{base}/api/v1/tasks/served_task/targets", json={"targets": [{"kind": "file", "value": str(sources)}]}
    )
    assert queued.status_code == 202
    poll(base, "served_task", "running")
    served.kill()  # mid-job: the job stays 'running' with a heartbeat that stops
    (job,) = graph.store.run("jobs/task_jobs", {"task_id": "served_task"})
    assert job["state"] == "running"

    served.start()  # a new process: it finds the stale job and runs it again
    status = poll(base, "served_task", "drained")
    (info,) = status["job_list"]
    assert info["state"] == "done" and info["attempts"] == 2, info
    pairs = graph.explore.query_graph(
        "MATCH (f:Fragment)-[r:SUPPORTS|REFUTES|NEUTRAL]->(c:Claim {task_id: $t}) "
        "WITH f, c, count(r) AS n RETURN max(n) AS most, count(*) AS pairs",
        {"t": "served_task"},
    ).rows[0]
    assert pairs["most"] == 1 and pairs["pairs"] >= 1  # one stance edge per (fragment, claim): nothing twice

    rest = httpx.get(f"{base}/api/v1/tasks/served_task/materials").json()

    async def over_mcp() -> Any:
        async with Client(f"{base}/mcp") as client:
            return (await client.call_tool("get_materials", {"task_id": "served_task"})).structured_content

    via_mcp = anyio.run(over_mcp)
    rest.pop("computed_at"), via_mcp.pop("computed_at")
    assert rest == via_mcp

    html = httpx.get(f"{base}/tasks/served_task/report").text
    assert CLAIM in html
    screenshot_report(f"{base}/tasks/served_task/report", CLAIM)


def screenshot_report(url: str, claim: str) -> None:
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("Debian's chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(url)
            assert page.get_by_text(claim).first.is_visible()
            (ROOT / "artifacts").mkdir(exist_ok=True)
            page.screenshot(path=str(ROOT / "artifacts" / "report_served.png"), full_page=True)
        finally:
            browser.close()
