"""Passages that left a changed page (decision record 0016), on real Neo4j, through the statements themselves: a
passage still on another page the task read keeps counting; one gone from every such page stops counting, its
weight out of the claims' stored sums exactly (compared with the sums recomputed from the edges, and with a rescore);
a new edge drawn for it is out from the start; a retraction does not subtract it twice; a passage back on its page
counts again unless its paper was retracted meanwhile; running a comparison again changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from lyra.bootstrap import Services
from lyra.services.freshness import supersede_passages
from tests.support.helpers import seed_task

pytestmark = pytest.mark.neo4j
TASK = "superseded_task"
SHARED = "Blood pressure fell by ten millimetres of mercury in the sound trial of the treatment."
ONLY_A = "A later analysis found no effect of the treatment on blood pressure at all."


def check_sums(services: Services) -> dict[str, Any]:
    rows = services.store.run("materials/check_claim_sums", {"task_id": TASK, "tolerance": 1e-9, "limit": 10})
    return dict(rows[0])


def stored(services: Services, claim_id: str) -> tuple[float, float, int, int, int]:
    record = services.store.driver.execute_query(
        "MATCH (c:Claim {id: $id}) RETURN c.evidence_support_weight AS sw, c.evidence_refute_weight AS rw, "
        "c.evidence_supports AS s, c.evidence_refutes AS r, c.evidence_neutrals AS n",
        id=claim_id,
    ).records[0]
    return (record["sw"], record["rw"], record["s"], record["r"], record["n"])


def flags(services: Services, edge_id: str) -> tuple[bool, bool]:
    record = services.store.driver.execute_query(
        "MATCH ()-[r {id: $id}]->() RETURN coalesce(r.superseded, false) AS s, coalesce(r.retracted, false) AS r",
        id=edge_id,
    ).records[0]
    return (record["s"], record["r"])


def test_superseded_passages_leave_and_reenter_the_sums_exactly(graph: Services) -> None:
    services = graph
    main, other, late = seed_task(services, TASK, ["the treatment lowers blood pressure", "it is safe", "it works"])
    a, b = services.evidence.upsert_pages(
        [{"url": f"https://news.invalid/{name}", "domain_category": "trusted"} for name in ("a", "b")]
    ).ids
    services.evidence.record_task_reads(TASK, [a, b], "superseded test")
    shared, only_a = services.evidence.upsert_fragments(
        [{"page_id": a, "text": SHARED}, {"page_id": a, "text": ONLY_A}]
    ).ids
    services.store.run("evidence/link_fragment_to_page", {"rows": [{"fragment_id": shared, "page_id": b}]})
    rows = [
        {"fragment_id": shared, "claim_id": main, "relation": "SUPPORTS", "nli_confidence": 0.7},
        {"fragment_id": only_a, "claim_id": main, "relation": "REFUTES", "nli_confidence": 0.6},
        {"fragment_id": only_a, "claim_id": other, "relation": "SUPPORTS", "nli_confidence": 0.55},
    ]
    e_shared, e_refute, e_other = services.evidence.create_stance_edges(rows).ids
    assert stored(services, main) == pytest.approx((0.7, 0.6, 1, 1, 0))
    assert stored(services, other) == pytest.approx((0.55, 0.0, 1, 0, 0))

    # page a's new version carries neither passage: only_a stops counting, shared is still on page b
    changes = supersede_passages(services.store, a, "Nothing about blood pressure any more.", [])
    assert (changes.gone, changes.back, changes.edges_superseded, changes.edges_restored) == (2, 0, 2, 0)
    assert flags(services, e_shared) == (False, False)
    assert flags(services, e_refute) == (True, False) and flags(services, e_other) == (True, False)
    assert stored(services, main) == pytest.approx((0.7, 0.0, 1, 0, 0))
    assert stored(services, other) == (0.0, 0.0, 0, 0, 0)  # no edge left: exactly zero
    assert check_sums(services)["differing"] == 0
    # the same comparison again changes nothing
    assert supersede_passages(services.store, a, "Nothing about blood pressure any more.", []).gone == 0
    assert stored(services, main) == pytest.approx((0.7, 0.0, 1, 0, 0))

    # page b drops the shared passage too (whitespace and case do not matter to what is kept: nothing is)
    changes = supersede_passages(services.store, b, "Another text.", [])
    assert changes.edges_superseded == 1 and flags(services, e_shared) == (True, False)
    assert stored(services, main) == (0.0, 0.0, 0, 0, 0)

    # a new edge drawn for a superseded passage is out from the start
    (e_late,) = services.evidence.create_stance_edges(
        [{"fragment_id": only_a, "claim_id": late, "relation": "REFUTES", "nli_confidence": 0.8}]
    ).ids
    assert flags(services, e_late) == (True, False) and stored(services, late) == (0.0, 0.0, 0, 0, 0)
    assert check_sums(services)["differing"] == 0

    # page b carries the shared passage again (other whitespace, other case): it counts again, exactly as before
    changes = supersede_passages(services.store, b, f"Intro.\n\n  {SHARED.upper()}  \nMore.", [])
    assert (changes.back, changes.edges_restored) == (1, 1)
    assert flags(services, e_shared) == (False, False)
    assert stored(services, main) == pytest.approx((0.7, 0.0, 1, 0, 0))

    # page a is found retracted: its superseded edges get the flag but are not subtracted a second time
    services.store.driver.execute_query("MATCH (p:Page {id: $id}) SET p.retracted_at = datetime()", id=a)
    services.store.run("retractions/retract_edges", {"task_id": TASK})
    assert flags(services, e_refute) == (True, True)
    assert stored(services, other) == (0.0, 0.0, 0, 0, 0)
    assert check_sums(services)["differing"] == 0
    # and when page a carries only_a again (found among the read's passages), its edges stay out: retracted
    changes = supersede_passages(services.store, a, "Unrelated text.", [only_a])
    assert changes.back == 1 and changes.edges_restored == 3
    assert flags(services, e_refute) == (False, True) and flags(services, e_late) == (False, True)
    assert stored(services, other) == (0.0, 0.0, 0, 0, 0) and stored(services, late) == (0.0, 0.0, 0, 0, 0)
    assert check_sums(services)["differing"] == 0
    rescored = services.store.run("materials/rescore_claims", {"task_id": TASK, "tolerance": 1e-9, "batch_size": 100})
    assert rescored is not None and check_sums(services)["differing"] == 0
