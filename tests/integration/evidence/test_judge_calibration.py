"""Each judge measured on the task's own corrections, and its effect on each claim, against the real Neo4j: edges
drawn by the offline judge, two assistants and a person; get_judge_calibration's agreement, confusion and
reliability table, and get_materials' per-claim judge counts and offline-only confidence, checked against numbers
worked out by hand from the formula of decision record 0003 (docs/concepts/assistant-judge.md)."""

from __future__ import annotations

import json
import math
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from lyra.bootstrap import Services, build_http_app
from lyra.mcp.server import create_mcp_server
from lyra.models.judge_calibration import GetJudgeCalibrationRequest
from lyra.models.judging import NextJudgmentsRequest, SubmitJudgmentsRequest
from lyra.models.trust import FeedbackRequest
from lyra.services.judging import JudgingService
from tests.support.helpers import claim_materials, neo4j_env, run_lyra, seed_task

pytestmark = pytest.mark.neo4j

OFFLINE = "offline:stance-test"
JUDGE_A = "assistant:client-a/1.0"
JUDGE_B = "assistant:client-b/2.0"
TASK = "jc_task"


def query(services: Services, cypher: str, **params: Any) -> list[dict[str, Any]]:
    records = services.store.driver.execute_query(cypher, params, database_=services.store.database).records
    return [r.data() for r in records]


def correct(services: Services, edge_id: str, relation: str) -> None:
    services.feedback.feedback(
        FeedbackRequest(
            task_id=TASK,
            action="edge_correct",
            args={"edge_id": edge_id, "correct_relation": relation},
            reviewer_id="ana",
        )
    )


def assistant_judges(services: Services, judge: str, verdicts: dict[str, tuple[str, float]]) -> None:
    """The assistant takes a batch and submits a verdict for the edges named in `verdicts` (edge id -> relation,
    confidence), through the real pull door."""
    svc = JudgingService(services.store, services.task_repo, services.settings.judging)
    batch = svc.next_judgments(NextJudgmentsRequest(task_id=TASK, limit=50, policy="uncertain", judge=judge))
    items = []
    for item in batch.items:
        (row,) = query(services, "MATCH (t:JudgingTicket {id: $id}) RETURN t.edge_id AS edge_id", id=item.ticket)
        if row["edge_id"] in verdicts:
            relation, confidence = verdicts[row["edge_id"]]
            items.append({"ticket": item.ticket, "relation": relation, "confidence": confidence})
    assert len(items) == len(verdicts)
    result = svc.submit_judgments(
        SubmitJudgmentsRequest.model_validate({"task_id": TASK, "items": items, "judge": judge})
    )
    assert result.errors == [] and len(result.written) == len(items)
    query(services, "MATCH (t:JudgingTicket {task_id: $t}) DELETE t", t=TASK)  # the unused tickets


def build(services: Services) -> tuple[str, dict[str, str]]:
    claim_id = seed_task(services, TASK, ["the claim the judges disagree on"])[0]
    names = ["e1", "e2", "e3", "e4", "e5", "e7", "e8"]
    pages = services.evidence.upsert_pages(
        [{"url": f"https://judges.invalid/{TASK}/{n}", "title": n} for n in names]
    ).ids
    services.evidence.record_task_reads(TASK, pages, "test")
    fragments = services.evidence.upsert_fragments(
        [{"page_id": p, "text": f"passage {n}"} for p, n in zip(pages, names, strict=True)]
    ).ids
    frag = dict(zip(names, fragments, strict=True))
    offline = {"e1": ("SUPPORTS", 0.8), "e2": ("REFUTES", 0.6), "e3": ("SUPPORTS", 0.7), "e4": ("NEUTRAL", 0.5),
               "e7": ("REFUTES", 0.9), "e8": ("SUPPORTS", 0.6)}  # fmt: skip
    rows = [
        {"fragment_id": frag[n], "claim_id": claim_id, "relation": rel, "nli_confidence": conf, "judge": OFFLINE}
        for n, (rel, conf) in offline.items()
    ]
    rows.append({"fragment_id": frag["e5"], "claim_id": claim_id, "relation": "SUPPORTS", "nli_confidence": 0.55})
    ids = services.evidence.create_stance_edges(rows).ids
    edges = dict(zip([*offline, "e5"], ids, strict=True))
    # e5: an edge an assistant drew first, no offline verdict behind it, as submit_judgments writes one for a pair
    # without an edge (its `unjudged` queue needs the ranking models); same relation and weight, so the sums hold
    query(
        services,
        "MATCH ()-[r {id: $id}]->() SET r.judge = $judge, r.judge_rank = 1, r.assistant_confidence = 0.55",
        id=edges["e5"],
        judge=JUDGE_A,
    )
    assistant_judges(services, JUDGE_A, {edges["e2"]: ("SUPPORTS", 0.9), edges["e8"]: ("SUPPORTS", 0.8)})
    assistant_judges(services, JUDGE_B, {edges["e4"]: ("SUPPORTS", 0.95)})
    correct(services, edges["e3"], "refutes")
    correct(services, edges["e4"], "refutes")
    correct(services, edges["e7"], "refutes")
    correct(services, edges["e8"], "supports")
    return claim_id, edges


def test_each_judge_is_measured_on_the_tasks_corrections(graph: Services) -> None:
    build(graph)
    report = graph.operations.get_judge_calibration(GetJudgeCalibrationRequest(task_id=TASK))
    assert report.corrected_pairs == 4  # e3, e4, e7, e8
    by_judge = {j.judge: j for j in report.judges}
    assert set(by_judge) == {OFFLINE, JUDGE_A, JUDGE_B}
    offline = by_judge[OFFLINE]
    # offline verdicts vs the person's: e3 S(0.7)/R, e4 N(0.5)/R, e7 R(0.9)/R, e8 S(0.6)/S
    assert (offline.kind, offline.samples, offline.agreements, offline.agreement) == ("offline", 4, 2, 0.5)
    assert offline.confusion["supports"] == {"supports": 1, "refutes": 1, "neutral": 0}
    assert offline.confusion["neutral"] == {"supports": 0, "refutes": 1, "neutral": 0}
    assert offline.confusion["refutes"] == {"supports": 0, "refutes": 1, "neutral": 0}
    assert offline.brier == pytest.approx((0.7**2 + 0.5**2 + 0.1**2 + 0.4**2) / 4)
    assert offline.ece == pytest.approx((0.7 + 0.5 + 0.1 + 0.4) / 4)
    filled = {round(b.lower, 1): (b.count, b.mean_confidence, b.accuracy) for b in offline.reliability if b.count}
    assert filled == {0.5: (1, 0.5, 0.0), 0.6: (1, 0.6, 1.0), 0.7: (1, 0.7, 0.0), 0.9: (1, 0.9, 1.0)}
    assert len(offline.reliability) == 10 and offline.fit is None and "4 of the 20" in (offline.fit_note or "")
    # assistant A: e8 S(0.8) right (e2 was never corrected); assistant B: e4 S(0.95) wrong
    a, b = by_judge[JUDGE_A], by_judge[JUDGE_B]
    assert (a.kind, a.samples, a.agreements, a.brier) == ("assistant", 1, 1, pytest.approx(0.2**2))
    assert (b.samples, b.agreements, b.brier) == (1, 0, pytest.approx(0.95**2))
    assert b.confusion["supports"]["refutes"] == 1
    # five bins asked for: the same samples, coarser table
    coarse = graph.operations.get_judge_calibration(GetJudgeCalibrationRequest(task_id=TASK, bins=5))
    off5 = next(j for j in coarse.judges if j.judge == OFFLINE)
    assert [b.count for b in off5.reliability] == [0, 0, 1, 2, 1]


def expected_confidence(alpha: float, beta: float) -> float:
    return alpha / (alpha + beta)


def test_materials_show_each_judges_edges_and_the_offline_only_confidence(graph: Services) -> None:
    claim_id, edges = build(graph)
    (claim,) = claim_materials(graph, TASK)
    assert claim.claim_id == claim_id
    assert claim.judges == {OFFLINE: 1, JUDGE_A: 2, "human:ana": 4}
    # all edges: e1 S 0.8 (offline), e2 S 0.9 (A), e5 S 0.55 (A), e3/e4/e7 R 1.0 (person), e8 S 1.0 (person)
    assert claim.alpha == pytest.approx(1 + 0.8 + 0.9 + 0.55 + 1.0)
    assert claim.beta == pytest.approx(1 + 3.0)
    # the offline judge alone: e1 S 0.8, e2 R 0.6, e3 S 0.7, e4 N (nothing), e7 R 0.9, e8 S 0.6; e5 left out
    alone = expected_confidence(1 + 0.8 + 0.7 + 0.6, 1 + 0.6 + 0.9)
    assert math.isclose(claim.offline_only_confidence, alone, rel_tol=0, abs_tol=1e-12)
    assert claim.confidence != pytest.approx(claim.offline_only_confidence)
    # the report page prints both, with the edges per judge
    page = graph.operations.report_html(TASK)
    assert f'<strong class="offline-only-confidence">{alone:.3f}</strong>' in page
    assert f'<span class="judges-effect">{"+" if claim.confidence >= alone else "-"}' in page
    assert '<span class="judge-name">human:ana</span> <strong class="judge-edges">4</strong>' in page
    # an edge whose offline verdict is only in the Judgment history (as for edges from before the edge kept it):
    # the same number, read from the history
    query(graph, "MATCH ()-[r {id: $id}]->() REMOVE r.offline_relation, r.offline_confidence", id=edges["e2"])
    (again,) = claim_materials(graph, TASK)
    assert math.isclose(again.offline_only_confidence, alone, rel_tol=0, abs_tol=1e-12)
    # without it anywhere the edge is left out, as an edge no offline judge drew
    query(graph, "MATCH (j:Judgment {edge_id: $id}) SET j.previous_judge = 'human:x'", id=edges["e2"])
    (left_out,) = claim_materials(graph, TASK)
    assert math.isclose(left_out.offline_only_confidence, expected_confidence(1 + 2.1, 1 + 0.9), abs_tol=1e-12)
    # a retracted edge counts for nothing in either
    query(graph, "MATCH ()-[r {id: $id}]->() SET r.retracted = true", id=edges["e1"])
    (retracted,) = claim_materials(graph, TASK)
    assert math.isclose(retracted.offline_only_confidence, expected_confidence(1 + 1.3, 1 + 0.9), abs_tol=1e-12)


def test_a_task_without_corrections_has_no_samples_and_unknown_task_is_refused(graph: Services) -> None:
    seed_task(graph, "jc_empty", ["a claim nobody corrected"])
    report = graph.operations.get_judge_calibration(GetJudgeCalibrationRequest(task_id="jc_empty"))
    assert report.judges == [] and report.corrected_pairs == 0
    (claim,) = claim_materials(graph, "jc_empty")
    assert claim.judges == {} and claim.offline_only_confidence == 0.5
    from lyra.core.errors import NotFoundError

    with pytest.raises(NotFoundError):
        graph.operations.get_judge_calibration(GetJudgeCalibrationRequest(task_id="jc_missing"))


def test_the_three_doors_give_the_same_report(graph: Services) -> None:
    build(graph)
    expected = graph.operations.get_judge_calibration(GetJudgeCalibrationRequest(task_id=TASK, bins=4)).model_dump()
    app = build_http_app(graph, workers=False, mcp=False)
    server = create_mcp_server(graph.operations)

    async def rest(path: str) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            return await client.get(path)

    async def mcp() -> Any:
        async with Client(server) as client:
            return await client.call_tool("get_judge_calibration", {"task_id": TASK, "bins": 4})

    answer = anyio.run(rest, f"/api/v1/tasks/{TASK}/judge-calibration?bins=4")
    assert answer.status_code == 200, answer.text
    assert answer.json() == expected
    assert anyio.run(rest, "/api/v1/tasks/jc_missing/judge-calibration").status_code == 404
    bad = anyio.run(rest, f"/api/v1/tasks/{TASK}/judge-calibration?bins=1")
    assert bad.status_code == 422 and "bins" in bad.text
    tool = anyio.run(mcp)
    assert not tool.is_error and tool.structured_content == expected
    printed = run_lyra("judge", "calibration", TASK, "--bins", "4", env=neo4j_env(graph.settings))
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout) == expected
