"""Retractions applied to the graph, against the real Neo4j and the scholarly replay server.

A task holds evidence from three papers; the world changes (one paper is retracted, another gets an expression of
concern); refresh_task reads the states fresh: the retracted paper's edges are flagged and leave the claims' stored
sums exactly (the claim stands as if they were absent: the same numbers as a rescore from the edges and as a task
that never had them), get_changes lists a retraction cause, the claim's timeline shows it, materials, the report and
the export flag the page; the expression of concern is shown and not counted; edges written later from the
retracted paper (an offline judge's, a person's correction) count for nothing; a second refresh changes nothing;
the task's clean-up leaves no residue."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from lyra.bootstrap import Services, build_services
from lyra.core.settings import load_settings
from lyra.models.api import GetMaterialsRequest, MaterialsOptions
from lyra.models.export import ExportRequest
from lyra.models.refresh import RefreshRequest
from lyra.models.timeline import GetChangesRequest, GetClaimTimelineRequest
from lyra.models.trust import FeedbackRequest
from lyra.testing.scholarly import ReplayServer
from tests.support.helpers import seed_task
from tests.support.retractions import CONCERN, PAPERS, RETRACTION, lyra, paper_pages, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.neo4j
TASK = "retraction_task"
TWIN = "retraction_twin"  # the same evidence without the retracted paper, written from scratch


def fragments(services: Services, page: str, texts: list[str]) -> list[str]:
    return services.evidence.upsert_fragments([{"page_id": page, "text": t} for t in texts]).ids


def edge(services: Services, fragment: str, claim: str, relation: str, confidence: float) -> str:
    rows = [{"fragment_id": fragment, "claim_id": claim, "relation": relation, "nli_confidence": confidence}]
    (edge_id,) = services.evidence.create_stance_edges(rows).ids
    return edge_id


def scores(services: Services, task_id: str) -> dict[str, dict[str, Any]]:
    return {s["claim_id"]: s for s in services.materials.scores(task_id)}


def check_sums(services: Services, task_id: str) -> dict[str, Any]:
    rows = services.store.run("materials/check_claim_sums", {"task_id": task_id, "tolerance": 1e-9, "limit": 10})
    return dict(rows[0])


def materials(services: Services, task_id: str) -> Any:
    options = MaterialsOptions(evidence_limit=50, include_neutral=True)
    return services.operations.get_materials(GetMaterialsRequest(task_id=task_id, options=options))


def build_task(services: Services) -> dict[str, Any]:
    main, other = seed_task(services, TASK, ["the treatment lowers blood pressure", "the treatment is safe"])
    pages = paper_pages(services, TASK, ["10.5555/keep", "10.5555/gone", "10.5555/worry"])
    (keep,) = fragments(services, pages["10.5555/keep"], ["Blood pressure fell by 10 mmHg in the sound trial."])
    gone = fragments(
        services,
        pages["10.5555/gone"],
        ["Blood pressure fell by 20 mmHg in the retracted trial.", "No adverse events were seen in that trial."],
    )
    (worry,) = fragments(services, pages["10.5555/worry"], ["Blood pressure fell a little under concern."])
    edges = {
        "keep": edge(services, keep, main, "SUPPORTS", 0.8),
        "gone_support": edge(services, gone[0], main, "SUPPORTS", 0.9),
        "gone_refute": edge(services, gone[1], main, "REFUTES", 0.35),
        "gone_other": edge(services, gone[1], other, "SUPPORTS", 0.7),
        "worry": edge(services, worry, main, "SUPPORTS", 0.6),
    }
    return {"main": main, "other": other, "pages": pages, "edges": edges, "gone_fragments": gone}


def twin_task(services: Services) -> tuple[str, str]:
    """The task's evidence without the retracted paper, written from scratch on pages of its own."""
    main, other = seed_task(services, TWIN, ["the treatment lowers blood pressure", "the treatment is safe"])
    pages = paper_pages(services, TWIN, ["10.5555/twin-keep", "10.5555/twin-worry"])
    (keep,) = fragments(services, pages["10.5555/twin-keep"], ["Twin: blood pressure fell by 10 mmHg."])
    (worry,) = fragments(services, pages["10.5555/twin-worry"], ["Twin: blood pressure fell a little."])
    edge(services, keep, main, "SUPPORTS", 0.8)
    edge(services, worry, main, "SUPPORTS", 0.6)
    return main, other


def same_scores(left: dict[str, Any], right: dict[str, Any]) -> None:
    for key in ("alpha", "beta", "confidence", "uncertainty", "controversy"):
        assert left[key] == pytest.approx(right[key], abs=1e-12), key
    for key in ("supports_count", "refutes_count", "neutral_count"):
        assert left[key] == right[key], key


def test_a_retracted_paper_stops_counting_and_says_so(lyra: Services, server: ReplayServer) -> None:  # noqa: F811
    services = lyra
    built = build_task(services)
    main, other, edges = built["main"], built["other"], built["edges"]
    services.operations.timeline.record_run(TASK, "ingest")
    before = scores(services, TASK)
    assert before[main]["alpha"] == pytest.approx(1 + 0.8 + 0.9 + 0.6)

    # the first refresh: nothing is retracted yet; states are kept on the pages
    first = services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0))
    assert {p.doi: p.state for p in first.retractions.pages} == {
        "10.5555/keep": "none",
        "10.5555/gone": "none",
        "10.5555/worry": "none",
    }
    assert first.retractions.edges_retracted == 0 and first.queued == 0

    # the world changes
    server.set_updates("gone", [RETRACTION])
    server.set_updates("worry", [CONCERN])
    result = services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0))
    check = result.retractions
    states = {p.doi: p for p in check.pages}
    assert states["10.5555/gone"].state == "retracted" and states["10.5555/gone"].newly_retracted
    assert states["10.5555/gone"].notices[0].notice_doi == "10.5555/gone.retraction"
    assert states["10.5555/worry"].state == "has_concern" and not states["10.5555/worry"].newly_retracted
    assert states["10.5555/keep"].state == "none"
    assert check.pages[0].doi == "10.5555/gone"  # retracted first
    assert check.edges_retracted == 3 and check.claims_moved == 2 and check.run_id

    # the claims stand exactly as if the retracted edges were absent
    now = scores(services, TASK)
    twin_main, twin_other = twin_task(services)
    twin = scores(services, TWIN)
    same_scores(now[main], twin[twin_main])
    same_scores(now[other], twin[twin_other])
    assert now[main]["beta"] == 1.0 and now[other]["alpha"] == 1.0  # no rounding residue
    assert now[main]["supports_count"] == 2 and now[main]["refutes_count"] == 0
    assert check_sums(services, TASK)["differing"] == 0
    services.store.run("materials/rescore_claims", {"task_id": TASK, "tolerance": 1e-9, "batch_size": 100})
    same_scores(scores(services, TASK)[main], now[main])

    # the page node keeps the state and the notices
    page = services.store.driver.execute_query(
        "MATCH (p:Page {id: $id}) RETURN p.retraction_state AS state, p.retracted_at IS NOT NULL AS at, "
        "p.retraction_notice_doi AS notice, p.retraction_source AS source, p.retraction_notices AS notices",
        id=built["pages"]["10.5555/gone"],
    ).records[0]
    assert page["state"] == "retracted" and page["at"] and page["notice"] == "10.5555/gone.retraction"
    assert page["source"] == "publisher" and json.loads(page["notices"])[0]["kind"] == "retraction"

    # get_changes lists the retraction as the cause, the timeline shows it
    changes = services.operations.get_changes(GetChangesRequest(task_id=TASK))
    assert [r.kind for r in changes.runs[:2]] == ["refresh", "retractions"]
    moved = {c.claim_id: c for c in changes.claims}
    assert set(moved) == {main, other}
    cause = next(c for c in moved[main].causes if c.kind == "retraction")
    assert set(cause.edge_ids) == {edges["gone_support"], edges["gone_refute"]}
    assert cause.notice_doi == "10.5555/gone.retraction" and cause.page and cause.page.doi == "10.5555/gone"
    assert moved[main].confidence_change < 0
    timeline = services.operations.get_claim_timeline(GetClaimTimelineRequest(task_id=TASK, claim_id=main))
    kinds = [e.kind for e in timeline.events]
    assert "retraction" in kinds
    assert timeline.events[0].kind in ("snapshot", "retraction")
    snapshot = next(e for e in timeline.events if e.kind == "snapshot")
    assert snapshot.detail["run_kind"] == "retractions"

    # materials flag the retracted items (weight 0) and show the concern without counting it against
    claims = {c.claim_id: c for c in materials(services, TASK).claims}
    items = {i.edge_id: i for i in claims[main].evidence}
    for key in ("gone_support", "gone_refute"):
        assert items[edges[key]].retracted and items[edges[key]].weight == 0.0
        assert items[edges[key]].retraction == "retracted"
        (gone_page,) = items[edges[key]].pages
        assert gone_page.retraction and gone_page.retraction.state == "retracted"
    concern = items[edges["worry"]]
    assert not concern.retracted and concern.weight == pytest.approx(0.6) and concern.retraction == "has_concern"
    assert concern.pages[0].retraction and concern.pages[0].retraction.notices[0].kind == "expression_of_concern"
    assert items[edges["keep"]].retraction == "none" and not items[edges["keep"]].retracted
    assert claims[main].confidence == pytest.approx(now[main]["confidence"])

    # the report page and the export say so
    html = services.operations.report_html(TASK)
    assert "retracted paper: this item no longer counts toward confidence" in html
    assert "expression of concern about this paper (shown, not counted)" in html
    exported = services.operations.export_evidence(ExportRequest(task_id=TASK, format="csv"))
    rows = list(csv.DictReader(io.StringIO(exported.content)))
    by_edge = {r["edge_id"]: r for r in rows}
    assert by_edge[edges["gone_support"]]["retraction"] == "retracted"
    assert by_edge[edges["gone_support"]]["weight"] == "0.000000"
    assert by_edge[edges["worry"]]["retraction"] == "has_concern"
    markdown = services.operations.export_evidence(ExportRequest(task_id=TASK, format="markdown")).content
    assert "RETRACTED (its evidence counts for nothing)" in markdown
    csl = json.loads(services.operations.export_evidence(ExportRequest(task_id=TASK, format="csl-json")).content)
    notes = {item.get("DOI"): item["note"] for item in csl}
    assert notes["10.5555/gone"].startswith("RETRACTED.")
    assert notes["10.5555/keep"].startswith("Lyra evidence.")

    # a second refresh changes nothing
    again = services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0))
    assert again.retractions.edges_retracted == 0 and again.retractions.claims_moved == 0
    assert not any(p.newly_retracted for p in again.retractions.pages)
    assert {p.doi: p.state for p in again.retractions.pages}["10.5555/gone"] == "retracted"
    after = scores(services, TASK)
    same_scores(after[main], now[main])
    same_scores(after[other], now[other])
    assert services.operations.get_changes(GetChangesRequest(task_id=TASK)).claims == []


def test_edges_written_later_from_a_retracted_paper_count_for_nothing(lyra: Services, server: ReplayServer) -> None:  # noqa: F811
    services = lyra
    built = build_task(services)
    main, other = built["main"], built["other"]
    server.set_updates("gone", [RETRACTION])
    services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0))
    settled = scores(services, TASK)

    # the offline judge's new edge from a passage of the retracted paper
    (late,) = fragments(services, built["pages"]["10.5555/gone"], ["A third finding of the retracted trial."])
    late_edge = edge(services, late, main, "REFUTES", 0.95)
    same_scores(scores(services, TASK)[main], settled[main])
    flagged = services.store.driver.execute_query(
        "MATCH ()-[r {id: $id}]->() RETURN r.retracted AS retracted", id=late_edge
    ).records[0]["retracted"]
    assert flagged is True

    # a person's correction of a retracted edge re-types it but it still counts for nothing
    services.operations.feedback(
        FeedbackRequest(
            task_id=TASK,
            action="edge_correct",
            args={"edge_id": built["edges"]["gone_other"], "correct_relation": "refutes"},
        )
    )
    same_scores(scores(services, TASK)[other], settled[other])
    assert check_sums(services, TASK)["differing"] == 0

    # the retraction check again: nothing left to retract, nothing moves
    again = services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0))
    assert again.retractions.edges_retracted == 0


def test_the_task_clean_up_leaves_no_residue(lyra: Services, server: ReplayServer) -> None:  # noqa: F811
    services = lyra
    build_task(services)
    server.set_updates("gone", [RETRACTION])
    services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0))
    services.cleanup.cleanup(TASK, "hard")
    left = services.store.driver.execute_query(
        "MATCH (n) WHERE n.task_id = $t OR (n:Task AND n.id = $t) RETURN labels(n) AS labels, count(*) AS n", t=TASK
    ).records
    assert [dict(r) for r in left] == []
    stray = services.store.driver.execute_query(
        "MATCH (p:Page) WHERE p.doi STARTS WITH '10.5555/' RETURN count(p) AS n"
    ).records[0]["n"]
    assert stray == 0


def test_a_source_that_cannot_answer_writes_nothing(graph: Services) -> None:
    services = graph
    build_task(services)
    settings = load_settings(
        neo4j_uri=services.settings.neo4j.neo4j_uri,
        neo4j_username=services.settings.neo4j.neo4j_username,
        neo4j_password=services.settings.neo4j.neo4j_password,
        crossref_url="http://127.0.0.1:9",
        openalex_url="http://127.0.0.1:9",
        scholarly_timeout_seconds=0.5,
        scholarly_max_attempts=1,
        scholarly_retry_timeout=0.5,
    )
    broken = build_services(settings, apply_schema=False)
    try:
        result = broken.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0))
    finally:
        broken.close()
    assert {p.state for p in result.retractions.pages} == {"unknown"}
    assert all(p.errors for p in result.retractions.pages)
    states = services.store.driver.execute_query(
        "MATCH (:Task {id: $t})-[:READ]->(p:Page) RETURN collect(p.retraction_state) AS s", t=TASK
    ).records[0]["s"]
    assert states == []
