"""get_materials pages through a task's claims (limit + opaque cursor) in every door; REST and the CLI stream a whole
task as one JSON document equal to the unpaged answer; the scores-only path agrees with get_materials."""

from __future__ import annotations

import base64
import json
import random
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from lyra.bootstrap import Services, build_http_app
from lyra.core.errors import InvalidInputError
from lyra.core.settings import Settings
from lyra.mcp.server import create_mcp_server
from lyra.models.api import MATERIALS_PAGE_MAX, GetMaterialsRequest, MaterialsOptions
from tests.support.helpers import neo4j_env, run_lyra, seed_fragments, seed_task

pytestmark = pytest.mark.neo4j
TASK = "paged_task"
CLAIMS = 23


@pytest.fixture
def paged(graph: Services) -> Services:
    claim_ids = seed_task(graph, TASK, [f"claim number {i}" for i in range(CLAIMS)])
    fragments = seed_fragments(graph, 6, prefix="paging")
    rng = random.Random(5)
    rows = [
        {
            "fragment_id": fragment,
            "claim_id": claim,
            "relation": rng.choice(["SUPPORTS", "REFUTES", "NEUTRAL"]),
            "nli_confidence": round(rng.random(), 3),
        }
        for claim in claim_ids
        for fragment in rng.sample(fragments, 3)
    ]
    graph.evidence.create_stance_edges(rows)
    return graph


def whole(services: Services, evidence_limit: int = 10) -> dict[str, Any]:
    request = GetMaterialsRequest(
        task_id=TASK, options=MaterialsOptions(evidence_limit=evidence_limit), limit=MATERIALS_PAGE_MAX
    )
    return services.operations.get_materials(request).model_dump(mode="json")


def test_pages_cover_every_claim_once_in_the_unpaged_order(paged: Services) -> None:
    expected = [c["claim_id"] for c in whole(paged)["claims"]]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = paged.operations.get_materials(GetMaterialsRequest(task_id=TASK, limit=5, cursor=cursor))
        pages += 1
        assert len(page.claims) <= 5
        seen.extend(c.claim_id for c in page.claims)
        cursor = page.next_cursor
        if cursor is None:
            break
        assert pages < 10
    assert pages == 5  # 23 claims, 5 per page
    assert seen == expected


def test_a_page_holds_the_same_numbers_as_the_whole_task(paged: Services) -> None:
    by_id = {c["claim_id"]: c for c in whole(paged)["claims"]}
    first = paged.operations.get_materials(GetMaterialsRequest(task_id=TASK, limit=7)).model_dump(mode="json")
    second = paged.operations.get_materials(
        GetMaterialsRequest(task_id=TASK, limit=7, cursor=first["next_cursor"])
    ).model_dump(mode="json")
    for claim in first["claims"] + second["claims"]:
        assert claim == by_id[claim["claim_id"]]


def test_last_page_has_no_cursor_and_an_exact_fit_needs_no_empty_page(paged: Services) -> None:
    page = paged.operations.get_materials(GetMaterialsRequest(task_id=TASK, limit=CLAIMS))
    assert len(page.claims) == CLAIMS and page.next_cursor is None


def _cursor(payload: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "not-a-cursor!",
        "e30",  # {}
        _cursor({"v": 1, "task": TASK, "at": "yesterday", "id": "clm_x"}),
        _cursor({"v": 2, "task": TASK, "at": "2025-01-01T00:00:00Z", "id": "clm_x"}),
        _cursor({"v": 1, "task": "other_task", "at": "2025-01-01T00:00:00Z", "id": "clm_x"}),
    ],
)
def test_a_bad_cursor_is_refused_naming_the_field(paged: Services, cursor: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        paged.operations.get_materials(GetMaterialsRequest(task_id=TASK, limit=5, cursor=cursor))
    assert info.value.field == "cursor"


def test_mcp_answers_a_bounded_page_with_a_cursor_by_default(paged: Services) -> None:
    async def run() -> list[dict[str, Any]]:
        async with Client(create_mcp_server(paged.operations)) as client:
            first = (await client.call_tool("get_materials", {"task_id": TASK, "limit": 10})).structured_content
            assert first is not None
            second = (
                await client.call_tool("get_materials", {"task_id": TASK, "limit": 10, "cursor": first["next_cursor"]})
            ).structured_content
            bad = await client.call_tool("get_materials", {"task_id": TASK, "cursor": "garbage"})
            assert bad.is_error and "cursor" in bad.content[0].text  # type: ignore[union-attr]
            return [first, second]

    first, second = anyio.run(run)
    assert len(first["claims"]) == 10 and first["next_cursor"]
    assert len(second["claims"]) == 10 and second["next_cursor"]
    expected = [c["claim_id"] for c in whole(paged)["claims"]][:20]
    assert [c["claim_id"] for c in first["claims"] + second["claims"]] == expected


def test_rest_pages_with_limit_and_streams_the_whole_task_without_it(paged: Services) -> None:
    app = build_http_app(paged, workers=False, mcp=False)

    async def run() -> tuple[httpx.Response, httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            url = f"/api/v1/tasks/{TASK}/materials"
            page = await client.get(url, params={"limit": 4, "evidence_limit": 2})
            streamed = await client.get(url, params={"evidence_limit": 2})
            bad = await client.get(url, params={"limit": 4, "cursor": "garbage"})
            return page, streamed, bad

    page, streamed, bad = anyio.run(run)
    assert page.status_code == 200 and len(page.json()["claims"]) == 4 and page.json()["next_cursor"]
    assert streamed.status_code == 200 and streamed.headers["content-type"] == "application/json"
    body = streamed.json()
    expected = whole(paged, evidence_limit=2)
    assert body["next_cursor"] is None
    assert body["claims"] == expected["claims"]
    assert {k: body[k] for k in ("task_id", "hypothesis", "status")} == {
        k: expected[k] for k in ("task_id", "hypothesis", "status")
    }
    assert bad.status_code == 422 and bad.json()["field"] == "cursor"


def test_streamed_json_over_several_pages_equals_the_unpaged_answer(paged: Services) -> None:
    request = GetMaterialsRequest(task_id=TASK, options=MaterialsOptions(evidence_limit=3), limit=4)
    body = json.loads(b"".join(paged.operations.get_materials_json(request)))
    assert body["claims"] == whole(paged, evidence_limit=3)["claims"]
    assert body["next_cursor"] is None


def test_cli_materials_json_streams_every_claim(paged: Services, settings: Settings) -> None:
    result = run_lyra("materials", TASK, "--json", "--evidence-limit", "2", env=neo4j_env(settings))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["claims"] == whole(paged, evidence_limit=2)["claims"]


def test_scores_agree_with_get_materials(paged: Services) -> None:
    materials = {c["claim_id"]: c for c in whole(paged)["claims"]}
    scores = paged.materials.scores(TASK)
    assert sorted(s["claim_id"] for s in scores) == sorted(materials)
    for score in scores:
        claim = materials[score["claim_id"]]
        for key in ("alpha", "beta", "confidence", "uncertainty", "controversy", "evidence_count", "supports_count"):
            assert score[key] == claim[key], key
