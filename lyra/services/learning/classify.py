"""Classify: how general a correction is, decided at once by the deterministic rules of
:mod:`lyra.services.learning_rules` from the record, the component's earlier records and the records most similar
to it (by context embedding); a proposal's evidence is classified the same way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lyra.services.learning.records import FeedbackIndex, FeedbackRecords, context_text
from lyra.services.learning_rules import Evaluation, RecordFacts, classify


def record_facts(record: dict[str, Any]) -> RecordFacts:
    """What the deterministic rules read of a stored (or about to be stored) record."""
    return RecordFacts(
        id=record["id"],
        kind=record["kind"],
        component=record["component"],
        task_id=record["task_id"],
        reviewer_id=record["reviewer_id"],
        edge_id=record.get("edge_id"),
        claim_id=record.get("claim_id"),
        predicted_label=record.get("predicted_label"),
        correct_label=record.get("correct_label"),
    )


class Classifier:
    """``similarity_threshold``: the cosine from which a record counts as similar; ``high_min``: the records of a
    pattern before it counts as generalizable_high."""

    def __init__(
        self, records: FeedbackRecords, index: FeedbackIndex, similarity_threshold: float, high_min: int
    ) -> None:
        self.records = records
        self.index = index
        self.similarity_threshold = similarity_threshold
        self.high_min = high_min

    def classify_new(self, row: dict[str, Any]) -> tuple[Evaluation, list[float]]:
        """A new record's classification, and its context embedding (for the index)."""
        history = [record_facts(r) for r in self.records.of_component(row["component"]) if r["id"] != row["id"]]
        vector = self.index.embed(context_text(row))
        similar = self.similar_facts(vector, self.similarity_threshold, exclude=row["id"])
        return classify(record_facts(row), history, similar, high_min=self.high_min), vector

    def classify_group(self, group: list[dict[str, Any]]) -> Evaluation:
        """A proposal's evidence (oldest first): its latest record classified against the others."""
        history = [record_facts(r) for r in group[:-1]]
        return classify(record_facts(group[-1]), history, high_min=self.high_min)

    def similar_facts(
        self, vector: Sequence[float], threshold: float, exclude: str, limit: int = 50
    ) -> list[tuple[RecordFacts, float]]:
        hits = [(rid, s) for rid, s in self.index.search(vector, limit + 1) if rid != exclude and s >= threshold]
        records = {r["id"]: r for r in self.records.by_ids([rid for rid, _ in hits])}
        return [(record_facts(records[rid]), s) for rid, s in hits if rid in records][:limit]
