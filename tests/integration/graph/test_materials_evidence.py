"""What get_materials lists beside the scores, checked against a reference computed in Python from the raw graph.

`claim_evidence.cypher` groups a batch's edges by fragment (each fragment's pages are read once per batch) and sorts
every edge of the batch once; this test makes sure that shortcut gives, per claim, exactly what the definition says:
the evidence items (SUPPORTS/REFUTES first, then NEUTRAL when asked for; strongest first, a human-corrected edge
weighing 1.0; then edge id), each with the pages of its fragment that the claim's task READ (crawled_at, then id;
the first one as the item's source), its passage and weight; how many could be listed; the oldest and newest year
over the task's pages of every evidence fragment; and the independent sources behind the SUPPORTS edges. Fragments are
shared by several claims and some sit on two pages (the same text found on another page); two pages were read only by
another task and must never be named; one claim has no edges. The claims are read as one batch and in parallel parts.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import pytest

from lyra.bootstrap import Services
from lyra.models.api import MATERIALS_PAGE_MAX, GetMaterialsRequest, MaterialsOptions
from lyra.models.trust import FeedbackRequest
from lyra.services import materials as materials_module
from lyra.services.provenance import independent_sources
from tests.support.helpers import seed_task

pytestmark = pytest.mark.neo4j
TASK = "evidence_listing"
RELATIONS = ("SUPPORTS", "REFUTES", "NEUTRAL")

RAW = """
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
RETURN c.id AS claim_id, collect(CASE WHEN r IS NOT NULL THEN
         {edge_id: r.id, relation: type(r), nli: r.nli_confidence, corrected: coalesce(r.edge_human_corrected, false),
          sdc: r.source_domain_category, judge: r.judge, fragment_id: f.id, text: f.text,
          pages: COLLECT { MATCH (f)-[:EXTRACTED_FROM]->(p:Page)<-[:READ]-(:Task {id: $task_id})
                           RETURN {id: p.id, url: p.url, title: p.title, year: p.year, doi: p.doi, venue: p.venue,
                                   crawled_at: p.crawled_at} }} END) AS edges
"""


@pytest.fixture
def listed(graph: Services) -> Services:
    services = graph
    rng = random.Random(14)
    claim_ids = seed_task(services, TASK, [f"listed claim {i}" for i in range(9)])
    # two batches: the second batch's pages are crawled later
    pages = [
        page
        for batch in (range(4), range(4, 8))
        for page in services.evidence.upsert_pages(
            [
                {
                    "url": f"https://listing.invalid/page/{i}",
                    "title": f"page {i}",
                    "year": rng.choice([None, 1999, 2005, 2011, 2020, 2024]),
                    "doi": f"10.5555/listing.{i}" if i % 3 == 0 else None,
                    "venue": "Journal of Listings" if i % 2 else None,
                }
                for i in batch
            ]
        ).ids
    ]
    # the task read pages 0-5; pages 6 and 7 were read by another task only
    services.evidence.record_task_reads(TASK, pages[:6], "listing test")
    texts = [f"listing fragment text {i}" for i in range(12)]
    fragment_ids = services.evidence.upsert_fragments(
        [{"page_id": pages[i % len(pages)], "text": text} for i, text in enumerate(texts)]
    ).ids
    # the same text found on a second page: one fragment, two pages (for fragments 5 and 7 the page linked second
    # was crawled first)
    again = services.evidence.upsert_fragments(
        [{"page_id": pages[(i + 3) % len(pages)], "text": texts[i]} for i in (0, 4, 5, 7)]
    ).ids
    assert again == [fragment_ids[i] for i in (0, 4, 5, 7)]
    rows = [
        {
            "fragment_id": fragment,
            "claim_id": claim,
            "relation": rng.choice(RELATIONS),
            # a few ties, so the edge id decides
            "nli_confidence": rng.choice([0.5, 0.5, round(rng.random(), 3), round(rng.random(), 3)]),
            "source_domain_category": rng.choice(["academic", "unverified"]),
        }
        for claim in claim_ids[:-1]  # the last claim has no edges
        for fragment in rng.sample(fragment_ids, rng.randint(1, 9))
    ]
    edges = services.evidence.create_stance_edges(rows)
    for edge_id, relation in ((edges.ids[0], "supports"), (edges.ids[5], "refutes")):
        services.feedback.feedback(
            FeedbackRequest(
                task_id=TASK,
                action="edge_correct",
                args={"edge_id": edge_id, "correct_relation": relation, "reason": "listing test"},
            )
        )
    return services


def marked(text: str | None) -> dict[str, Any] | None:
    """Clean source text as get_materials shows it (the listing test's texts are all clean)."""
    if text is None:
        return None
    return {"text": text, "untrusted": True, "truncated": False, "flagged": False, "withheld": False, "findings": []}


def reference(services: Services, limit: int, include_neutral: bool) -> dict[str, dict[str, Any]]:
    records = services.store.driver.execute_query(RAW, {"task_id": TASK}, database_=services.store.database).records
    expected: dict[str, dict[str, Any]] = {}
    for record in records:
        edges = record["edges"]
        years = [p["year"] for e in edges for p in e["pages"] if p["year"] is not None]
        supporting = [
            [e["fragment_id"], [[p["id"], p["doi"], p["title"], p["year"]] for p in e["pages"]]]
            for e in edges
            if e["relation"] == "SUPPORTS"
        ]
        eligible = [e for e in edges if include_neutral or e["relation"] != "NEUTRAL"]
        eligible.sort(
            key=lambda e: (e["relation"] == "NEUTRAL", -(1.0 if e["corrected"] else float(e["nli"])), e["edge_id"])
        )
        items = []
        for e in eligible[:limit]:
            read = sorted(e["pages"], key=lambda p: (p["crawled_at"], p["id"]))
            listed = [
                {k: p[k] for k in ("url", "year", "doi")}
                | {"source_id": p["id"], "title": marked(p["title"]), "venue": marked(p["venue"])}
                | {"retraction": None}  # never checked (tests/integration/test_retractions.py checks them)
                for p in read
            ]
            first: dict[str, Any] = (
                listed[0] if listed else dict.fromkeys(("source_id", "url", "title", "year", "doi", "venue"))
            )
            items.append(
                {
                    "edge_id": e["edge_id"],
                    "relation": e["relation"].lower(),
                    "fragment_id": e["fragment_id"],
                    **first,
                    "pages": listed[:5],
                    "pages_total": len(listed),
                    "passage": marked(e["text"]),
                    "decisive_sentence": None,
                    "nli_confidence": e["nli"],
                    "weight": 1.0 if e["corrected"] else e["nli"],
                    "source_domain_category": e["sdc"],
                    "edge_human_corrected": e["corrected"],
                    "judge": e["judge"],
                    "retracted": False,
                    "superseded": False,  # no page changed (tests/integration/web/test_page_freshness.py)
                    "retraction": None,
                }
            )
        expected[record["claim_id"]] = {
            "evidence": items,
            "evidence_truncated": len(eligible) > len(items),
            "evidence_years": {"oldest": min(years, default=None), "newest": max(years, default=None)},
            "independent_sources": independent_sources(supporting),
        }
    return expected


def listing(services: Services, limit: int, include_neutral: bool) -> dict[str, dict[str, Any]]:
    request = GetMaterialsRequest(
        task_id=TASK,
        options=MaterialsOptions(evidence_limit=limit, include_neutral=include_neutral),
        limit=MATERIALS_PAGE_MAX,
    )
    answer = services.operations.get_materials(request).model_dump(mode="json")
    keys = ("evidence", "evidence_truncated", "evidence_years", "independent_sources")
    return {c["claim_id"]: {k: c[k] for k in keys} for c in answer["claims"]}


@pytest.mark.parametrize(("limit", "include_neutral"), [(0, False), (2, False), (3, True), (10, False), (50, True)])
def test_evidence_listing_matches_the_definition(listed: Services, limit: int, include_neutral: bool) -> None:
    expected = reference(listed, limit, include_neutral)
    assert len(expected) == 9
    assert listing(listed, limit, include_neutral) == expected


def test_the_listing_is_the_same_read_in_parallel_parts(listed: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = listing(listed, 10, True)
    monkeypatch.setattr(materials_module, "CLAIMS_PER_PART", 2)
    parts = listed.materials._parts(list(whole))
    assert len(parts) > 1
    assert listing(listed, 10, True) == whole


def test_the_reference_sees_shared_and_two_page_fragments(listed: Services) -> None:
    """Guard on the fixture: the shortcut is only tested if fragments are shared and some have two pages."""
    records = listed.store.driver.execute_query(RAW, {"task_id": TASK}, database_=listed.store.database).records
    uses: dict[str, int] = defaultdict(int)
    two_pages = set()
    for record in records:
        for edge in record["edges"]:
            uses[edge["fragment_id"]] += 1
            if len(edge["pages"]) == 2:
                two_pages.add(edge["fragment_id"])
    assert max(uses.values()) >= 3
    assert two_pages
