"""What the tests of passages leaving a page read again share (decision record 0016): a two-passage text about
time-restricted eating, the claim it bears on, and reads of the edges, the stored sums, materials and the timeline.

The text: more than one passage's worth (chunk_max_chars 900). The first passage is the whole of ``KEPT``, the
second the last sentence of ``KEPT`` (the windows overlap by one) and ``DROPPED``; without ``DROPPED`` the text is
the first passage alone, so the second passage leaves and its edge stops counting."""

from __future__ import annotations

from typing import Any

import pytest

from lyra.bootstrap import Services
from lyra.models.api import GetMaterialsRequest, MaterialsOptions, RescoreRequest
from lyra.models.timeline import GetClaimTimelineRequest

CLAIM = "Time-restricted eating improves insulin sensitivity in adults"
KEPT = """In a randomized trial of 90 adults, eating within an eight-hour window for twelve weeks improved insulin
sensitivity compared with usual eating, independently of weight loss. Fasting insulin fell by eleven percent and the
effect persisted at a follow-up visit three months after the intervention ended. The participants kept to the
eating window on most days, as recorded by a smartphone application that logged the time of every meal and snack.
Insulin sensitivity was measured with a hyperinsulinemic euglycemic clamp, the reference method, before and after
the twelve weeks. Adverse events were rare and mild: some participants reported hunger in the first two weeks, which
faded as they became used to the schedule. The authors conclude that time-restricted eating improves insulin
sensitivity in adults."""
DROPPED = """A second cohort of 40 older adults who ate within an eight-hour window for eight weeks showed no change in
insulin sensitivity or in fasting glucose compared with a control group eating across the whole day. In that cohort
the eating window did not change body weight either, and the authors of the second study saw no benefit at all."""
MARK = "second cohort"  # only in DROPPED
COUNT_KEY = {"SUPPORTS": "s", "REFUTES": "r", "NEUTRAL": "n"}


def edges_of(services: Services, page_id: str, task_id: str) -> dict[str, dict[str, Any]]:
    """The task's stance edges from the page's passages, keyed ``dropped`` (the passage carrying DROPPED) and
    ``kept``, with their flags and weight."""
    records, _, _ = services.store.driver.execute_query(
        "MATCH (:Page {id: $page})<-[:EXTRACTED_FROM]-(f:Fragment)-[r:SUPPORTS|REFUTES|NEUTRAL]->"
        "(c:Claim {task_id: $t}) "
        "RETURN f.text AS text, r.id AS id, type(r) AS rel, coalesce(r.superseded, false) AS superseded, "
        "r.superseded_at IS NOT NULL AS superseded_at, r.restored_at IS NOT NULL AS restored_at, c.id AS claim_id, "
        "CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE toFloat(r.nli_confidence) END AS weight",
        {"page": page_id, "t": task_id},
        database_=services.store.database,
    )
    found: dict[str, dict[str, Any]] = {}
    for record in records:
        key = "dropped" if MARK in record["text"] else "kept"
        assert key not in found, record["text"]
        found[key] = record.data()
    return found


def superseded_links(services: Services, page_id: str) -> list[tuple[bool, bool]]:
    """(passage carries DROPPED, superseded on the page) for each passage of the page."""
    records, _, _ = services.store.driver.execute_query(
        "MATCH (:Page {id: $page})<-[e:EXTRACTED_FROM]-(f:Fragment) "
        "RETURN f.text CONTAINS $mark AS dropped, e.superseded_at IS NOT NULL AS superseded",
        {"page": page_id, "mark": MARK},
        database_=services.store.database,
    )
    return sorted((r["dropped"], r["superseded"]) for r in records)


def assert_sums_exact(services: Services, claim_id: str, task_id: str) -> dict[str, Any]:
    """The claim's stored sums, checked against the same sums added up here from the edges that are neither
    retracted nor superseded, and against a rescore's check."""
    records, _, _ = services.store.driver.execute_query(
        "MATCH (c:Claim {id: $id}) OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment) "
        "RETURN c.evidence_support_weight AS sw, c.evidence_refute_weight AS rw, c.evidence_supports AS s, "
        "c.evidence_refutes AS r, c.evidence_neutrals AS n, "
        "collect([type(r), coalesce(r.retracted, false) OR coalesce(r.superseded, false), "
        "CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE toFloat(r.nli_confidence) END]) AS edges",
        {"id": claim_id},
        database_=services.store.database,
    )
    row = records[0]
    counting = [(rel, weight) for rel, out, weight in row["edges"] if rel is not None and not out]
    stored = {k: row[k] for k in ("sw", "rw", "s", "r", "n")}
    assert (stored["s"], stored["r"], stored["n"]) == (
        sum(1 for rel, _ in counting if rel == "SUPPORTS"),
        sum(1 for rel, _ in counting if rel == "REFUTES"),
        sum(1 for rel, _ in counting if rel == "NEUTRAL"),
    ), stored
    assert stored["sw"] == pytest.approx(sum(w for rel, w in counting if rel == "SUPPORTS"), abs=1e-9)
    assert stored["rw"] == pytest.approx(sum(w for rel, w in counting if rel == "REFUTES"), abs=1e-9)
    check = services.operations.rescore_claims(RescoreRequest(task_id=task_id, check=True))
    assert check.differing == 0 and check.claims >= 1
    return stored


def evidence_item(services: Services, task_id: str, claim_id: str, edge_id: str) -> Any:
    """The claim's evidence item of the edge in get_materials (neutral items included)."""
    options = MaterialsOptions(evidence_limit=50, include_neutral=True)
    materials = services.operations.get_materials(GetMaterialsRequest(task_id=task_id, options=options))
    (claim,) = [c for c in materials.claims if c.claim_id == claim_id]
    (item,) = [i for i in claim.evidence if i.edge_id == edge_id]
    return item


def timeline_edges(services: Services, task_id: str, claim_id: str, kind: str) -> list[str]:
    """The edge ids of the claim's timeline events of ``kind`` (passage_superseded, passage_restored)."""
    timeline = services.operations.get_claim_timeline(GetClaimTimelineRequest(task_id=task_id, claim_id=claim_id))
    return [str(e.detail["edge_id"]) for e in timeline.events if e.kind == kind]
