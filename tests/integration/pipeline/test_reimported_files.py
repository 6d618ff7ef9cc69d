"""A local file imported again compares versions like a web page read again (decision record 0016,
docs/concepts/living-evidence.md): the same path is the same page; a passage removed from the file stops counting
(its edge flagged superseded, out of the claim's stored sums, the report saying so, a page_changed cause in
get_changes), one put back counts again, and importing an unchanged file moves nothing. Real Neo4j, the real
offline models, the synchronous ingest door."""

from __future__ import annotations

from pathlib import Path

import pytest

from lyra.bootstrap import Services
from lyra.models.ingest import IngestReport, IngestRequest
from lyra.models.timeline import GetChangesRequest
from tests.support.passages import CLAIM, COUNT_KEY, DROPPED, KEPT, assert_sums_exact, edges_of, superseded_links

pytestmark = pytest.mark.neo4j
TASK = "reimported_files"


def page_id_of(services: Services, path: Path) -> str:
    records, _, _ = services.store.driver.execute_query(
        "MATCH (p:Page) WHERE p.url ENDS WITH $name RETURN p.id AS id",
        {"name": path.name},
        database_=services.store.database,
    )
    (record,) = records
    return str(record["id"])


def test_a_passage_removed_from_a_local_file_stops_counting_until_it_is_back(graph: Services, tmp_path: Path) -> None:
    notes = tmp_path / "fasting_notes.txt"

    def imported(text: str) -> IngestReport:
        notes.write_text(text, encoding="utf-8")
        return graph.operations.ingest(IngestRequest(task_id=TASK, paths=[notes]))

    graph.tasks.create_task(TASK, CLAIM)
    first_report = imported(f"{KEPT}\n\n{DROPPED}\n")
    assert first_report.pages_new == 1 and not first_report.passages.any
    page_id = page_id_of(graph, notes)
    first = edges_of(graph, page_id, TASK)
    assert set(first) == {"kept", "dropped"}, first
    claim_id, dropped_id = first["dropped"]["claim_id"], first["dropped"]["id"]
    counts_key = COUNT_KEY[first["dropped"]["rel"]]
    before = assert_sums_exact(graph, claim_id, TASK)

    # the file loses its second paragraph
    since = graph.store.driver.execute_query("RETURN toString(datetime()) AS now").records[0]["now"]
    second_report = imported(f"{KEPT}\n")
    assert second_report.pages_existing == 1 and page_id_of(graph, notes) == page_id
    assert (second_report.passages.superseded, second_report.passages.edges_superseded) == (1, 1)
    assert superseded_links(graph, page_id) == [(False, False), (True, True)]
    second = edges_of(graph, page_id, TASK)
    assert second["dropped"]["id"] == dropped_id and second["dropped"]["superseded"]
    assert not second["kept"]["superseded"]
    after = assert_sums_exact(graph, claim_id, TASK)
    assert after[counts_key] == before[counts_key] - 1
    changes = graph.operations.get_changes(GetChangesRequest(task_id=TASK, since=since))
    (moved,) = [c for c in changes.claims if c.claim_id == claim_id]
    cause = next(c for c in moved.causes if c.kind == "page_changed")
    assert cause.edge_ids == [dropped_id] and cause.page is not None and cause.page.source_id == page_id

    # the same file again: nothing moves
    assert not imported(f"{KEPT}\n").passages.any
    assert assert_sums_exact(graph, claim_id, TASK) == after

    # the paragraph is back: the same edge counts again
    back = imported(f"{KEPT}\n\n{DROPPED}\n")
    assert (back.passages.restored, back.passages.edges_restored) == (1, 1)
    third = edges_of(graph, page_id, TASK)
    assert (
        third["dropped"]["id"] == dropped_id and not third["dropped"]["superseded"] and third["dropped"]["restored_at"]
    )
    restored = assert_sums_exact(graph, claim_id, TASK)
    assert restored[counts_key] == before[counts_key]
