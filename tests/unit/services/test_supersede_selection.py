"""Which of a page's passages left it and which came back (lyra/services/freshness.supersede_passages), with a fake
store standing in for Neo4j (a unit test: the statements themselves are tested on real Neo4j in
tests/integration/evidence/test_superseded_passages.py)."""

from __future__ import annotations

from typing import Any, cast

from lyra.graph.store import GraphStore
from lyra.services.freshness import normalized, supersede_passages


class FakeStore:
    def __init__(self, passages: list[dict[str, Any]]) -> None:
        self.passages = passages
        self.writes: list[dict[str, Any]] = []

    def run(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        if name == "freshness/page_passages":
            return self.passages
        self.writes.append({"name": name, **params})
        return [{"claim_id": "clm_1", "task_id": "t", "superseded": ["e1"], "restored": ["e2", "e3"]}]


def test_normalized_ignores_whitespace_and_case() -> None:
    assert normalized("  A  b\n\tC ") == "a b c"


def test_gone_and_back_are_chosen_by_id_or_by_text_in_the_new_version() -> None:
    store = FakeStore(
        [
            {"fragment_id": "f_text", "text": "Still  HERE in the text.", "superseded": False},
            {"fragment_id": "f_id", "text": "a near duplicate, worded otherwise", "superseded": False},
            {"fragment_id": "f_gone", "text": "Removed from the page.", "superseded": False},
            {"fragment_id": "f_gone_before", "text": "Long gone.", "superseded": True},
            {"fragment_id": "f_back", "text": "Back again.", "superseded": True},
        ]
    )
    text = "Intro. still here in the text. More.\n\nback   again."
    changes = supersede_passages(cast(GraphStore, store), "pg_1", text, ["f_id"])
    (write,) = store.writes
    assert write == {
        "name": "freshness/supersede_passages",
        "page_id": "pg_1",
        "gone_ids": ["f_gone"],
        "back_ids": ["f_back"],
    }
    assert (changes.gone, changes.back, changes.edges_superseded, changes.edges_restored, changes.claims) == (
        1,
        1,
        1,
        2,
        1,
    )


def test_nothing_to_change_writes_nothing() -> None:
    store = FakeStore([{"fragment_id": "f", "text": "Same text.", "superseded": False}])
    assert supersede_passages(cast(GraphStore, store), "pg_1", "same text.", []).gone == 0
    assert store.writes == []
