"""`lyra graph load --bulk` (neo4j-admin offline import into the empty managed instance) gives the same graph as the
transactional load: same materials, decision record 0002 re-discovery and one edge per pair inside the document; it
refuses a
non-empty database and bad input before stopping anything.

The import stops its instance, replaces the database and starts it again, so these tests run on a managed instance
of their own (``scratch``, started here and stopped at the end of the module), never on the one the rest of the
run shares."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from lyra.bootstrap import Services, build_services
from lyra.core.errors import ConflictError, InvalidInputError
from lyra.core.settings import Settings, load_settings
from lyra.graph.connection import bind_neomodel
from lyra.graph.server import LocalNeo4j, instance_for_uri
from lyra.models.api import MATERIALS_PAGE_MAX, GetMaterialsRequest, MaterialsOptions, RescoreRequest
from lyra.services.bulk_import import bulk_load_graph
from lyra.services.graph_import import load_graph
from tests.support.helpers import ROOT

pytestmark = pytest.mark.neo4j


def document() -> dict[str, Any]:
    """The example graph plus in-document duplicates: a page with a known DOI under another URL, a fragment with a
    known text on it, a stance edge for a pair the document already has (same relation), and the URL of a page with
    a DOI met again without the DOI (one page, linked through the mirror's DOI too), with a fragment of its own."""
    data: dict[str, Any] = json.loads((ROOT / "config/examples/example_graph.json").read_text(encoding="utf-8"))
    trial = next(p for p in data["pages"] if p["key"] == "p_trial_a")
    text = next(f for f in data["fragments"] if f["key"] == "f_a1")["text"]
    data["pages"].append({**trial, "key": "p_mirror", "url": "https://mirror.example.net/trial-a"})
    data["fragments"].append({"key": "f_again", "page": "p_mirror", "position": 0, "text": "  " + text})
    data["edges"].append({"fragment": "f_again", "claim": "hypothesis", "relation": "REFUTES", "nli_confidence": 0.91})
    data["pages"].append({"key": "p_trial_url", "url": trial["url"]})
    data["fragments"].append({"key": "f_url", "page": "p_trial_url", "position": 9, "text": "Seen again by URL only."})
    data["edges"].append({"fragment": "f_url", "claim": "hypothesis", "relation": "SUPPORTS", "nli_confidence": 0.66})
    return data


def materials_by_text(services: Services, task_id: str) -> dict[str, dict[str, Any]]:
    request = GetMaterialsRequest(
        task_id=task_id, options=MaterialsOptions(evidence_limit=100), limit=MATERIALS_PAGE_MAX
    )
    out: dict[str, dict[str, Any]] = {}
    for claim in services.operations.get_materials(request).model_dump(mode="json")["claims"]:
        claim.pop("claim_id")
        for item in claim["evidence"]:
            for key in ("edge_id", "fragment_id", "source_id"):
                item.pop(key)
            for page in item["pages"]:  # ids differ between the two loads; the pages' contents must not
                page.pop("source_id")
        out[claim["text"]] = claim
    return out


def stored_sums_by_text(services: Services) -> dict[str, tuple[list[float], list[int]]]:
    """Each claim's stored sums (weights, counts), by claim text."""
    rows = services.store.driver.execute_query(
        "MATCH (c:Claim) RETURN c.text AS text, [c.evidence_support_weight, c.evidence_refute_weight] AS weights, "
        "[c.evidence_supports, c.evidence_refutes, c.evidence_neutrals] AS counts",
        database_=services.store.database,
    ).records
    return {r["text"]: (r["weights"], r["counts"]) for r in rows}


SCRATCH = "scratch"


@pytest.fixture(scope="module")
def scratch(settings: Settings) -> Iterator[Settings]:
    """Settings for the ``scratch`` managed instance (installed with the run's own instance), stopped afterwards."""
    if instance_for_uri(settings.neo4j.neo4j_uri, settings.paths.state_dir) is None:
        pytest.skip("the offline importer needs the managed instances (NEO4J_URI is not one of them)")
    server = LocalNeo4j(settings, SCRATCH)
    status = server.start()
    try:
        yield load_settings(
            neo4j_uri=status.bolt_uri,
            neo4j_username="neo4j",
            neo4j_password=server.password(),
            neo4j_instance=SCRATCH,
            write_batch_size=500,
            cleanup_batch_size=200,
        )
    finally:
        server.stop()


@pytest.fixture
def graph_s(scratch: Settings, services: Services) -> Iterator[Services]:
    """Services over the scratch instance, emptied and test-marked; a fresh driver per test, because an import
    replaces the database under it. neomodel is handed back to the run's own instance afterwards."""
    own = build_services(scratch, apply_schema=True)
    try:
        own.store.run("admin/wipe_all_data", {"batch_size": 10_000})
        own.store.run("admin/mark_test_database")
        yield own
    finally:
        own.close()
        bind_neomodel(services.store.driver, services.settings)


def test_bulk_import_gives_the_same_graph_as_the_transactional_load(
    graph_s: Services, request: pytest.FixtureRequest
) -> None:
    graph = graph_s
    settings = graph.settings
    data = document()
    load_graph(copy.deepcopy(data), graph.tasks, graph.evidence)
    expected = materials_by_text(graph, "example_vitamin_d")
    expected_sums = stored_sums_by_text(graph)
    expected_counts = graph.cleanup.counts()
    graph.store.run("admin/wipe_all_data", {"batch_size": 10_000})
    graph.store.run("admin/mark_test_database")

    report, claim_ids = bulk_load_graph(data, settings)
    # the database was replaced: a driver that wrote to the old one holds bookmarks the new one never reaches, so a
    # client reconnects after an import (as `lyra serve` is restarted after one)
    graph = build_services(settings, apply_schema=False)
    request.addfinalizer(graph.close)

    assert report.instance == SCRATCH
    assert (report.pages, report.fragments, report.edges) == (7, 9, 13)  # the duplicates folded in
    assert set(claim_ids) == {"hypothesis", "calcium_combo", "high_dose"}
    assert graph.cleanup.counts() == expected_counts
    assert materials_by_text(graph, "example_vitamin_d") == expected
    # the claims carry the stored sums the transactional writes would have left, and they match their edges
    sums = stored_sums_by_text(graph)
    assert sums.keys() == expected_sums.keys()
    for text, (weights, counts) in sums.items():
        assert weights == pytest.approx(expected_sums[text][0], abs=1e-12) and counts == expected_sums[text][1]
    check = graph.materials.rescore(RescoreRequest(check=True))
    assert (check.claims, check.unstored, check.differing) == (3, 0, 0)
    summary = graph.store.run("admin/database_summary")[0]
    assert summary["test_markers"] == 1  # the test marker is carried over
    # every imported fragment waits for its sequence number, so each process's FAISS cache catches up with it
    numbered = graph.store.run("fragment_index/sequence_fragments", {"limit": 1000})
    assert numbered[0]["sequenced"] == report.fragments
    # the imported graph takes transactional writes like any other: re-discovery by DOI keeps the page's id
    page = graph.evidence.upsert_pages([{"url": "https://elsewhere.example/x", "doi": "10.5555/lyra.example.001"}])
    assert page.created == 0

    with pytest.raises(ConflictError, match="empty"):
        bulk_load_graph(document(), settings)


def test_bad_documents_are_refused_before_the_server_is_touched(graph_s: Services) -> None:
    graph, settings = graph_s, graph_s.settings
    data = document()
    data["edges"].append({"fragment": "f_a1", "claim": "hypothesis", "relation": "SUPPORTS", "nli_confidence": 0.5})
    with pytest.raises(InvalidInputError) as info:
        bulk_load_graph(data, settings)
    assert info.value.field == f"edges[{len(data['edges']) - 1}].relation"
    bad = document()
    bad["edges"][0]["nli_confidence"] = 3
    with pytest.raises(InvalidInputError) as info:
        bulk_load_graph(bad, settings)
    assert info.value.field == "edges[0].nli_confidence"
    assert graph.store.run("admin/database_summary")[0]["nodes"] == 1  # only the marker: nothing written
