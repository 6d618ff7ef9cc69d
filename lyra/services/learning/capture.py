"""Capture: every applied ``feedback`` action becomes a feedback record — its target, the verdict it concerns
(judge id, rule-set version, label, confidence), the reviewer, tags and comment — classified at once
(:mod:`~lyra.services.learning.classify`), stored and indexed for similarity. An ``edge_correct`` that keeps the
relation is a positive record; rejecting a claim the LLM extracted is a correction of claim extraction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lyra.core.ids import new_id
from lyra.graph.store import GraphStore, to_plain
from lyra.models.learning import ANONYMOUS, FeedbackRecord, GetFeedbackRequest
from lyra.models.trust import FeedbackRequest, FeedbackResponse
from lyra.services.learning.classify import Classifier
from lyra.services.learning.records import FeedbackIndex, FeedbackRecords
from lyra.services.learning_rules import EXTRACTION_RECORDS


class Capture:
    """``after_capture``: called after each record is stored (the automatic proposal batch)."""

    def __init__(
        self,
        store: GraphStore,
        records: FeedbackRecords,
        index: FeedbackIndex,
        classifier: Classifier,
        after_capture: Callable[[], None],
    ) -> None:
        self.store = store
        self.records = records
        self.index = index
        self.classifier = classifier
        self.after_capture = after_capture

    def edge_snapshot(self, task_id: str, edge_id: object) -> dict[str, Any] | None:
        """The edge as the judge left it, read before a reviewer's ``edge_correct`` changes it."""
        if not isinstance(edge_id, str):
            return None
        rows = self.store.run("learning/edge_snapshot", {"task_id": task_id, "edge_id": edge_id})
        return to_plain(rows[0]) if rows else None

    def capture(
        self, request: FeedbackRequest, response: FeedbackResponse, snapshot: dict[str, Any] | None
    ) -> FeedbackRecord:
        """The feedback record of an applied feedback action, classified and indexed."""
        reviewer = request.reviewer_id or ANONYMOUS
        args = request.args
        changed = response.changed
        row: dict[str, Any] = {
            "id": new_id("fbr"),
            "event_id": response.event_id,
            "task_id": request.task_id,
            "reviewer_id": reviewer,
            "tags": list(request.tags),
            "comment": args.get("reason") if isinstance(args.get("reason"), str) else None,
        }
        if request.action == "edge_correct":
            snap = snapshot or {}
            kept = not changed.get("changed", True)
            row.update(
                kind="confirmation" if kept else ("relabel" if snap.get("human_label") else "correction"),
                component="stance",
                edge_id=changed.get("edge_id"),
                claim_id=changed.get("claim_id"),
                domain=snap.get("domain"),
                judge_id=snap.get("judge_id"),
                rules_version=snap.get("rules_version"),
                predicted_label=snap.get("predicted_label") or changed.get("previous_relation"),
                predicted_confidence=snap.get("predicted_confidence"),
                correct_label={"supports": "entailment", "refutes": "contradiction", "neutral": "neutral"}.get(
                    str(changed.get("relation")), changed.get("relation")
                ),
                premise=snap.get("premise"),
                hypothesis=snap.get("hypothesis"),
            )
        elif request.action in ("claim_reject", "claim_restore"):
            row.update(self._claim_row(request.task_id, request.action, changed.get("claim_id")))
        else:
            row.update(kind="domain_rule", component="domain_policy", domain=changed.get("domain_pattern"))
        evaluation, vector = self.classifier.classify_new(row)
        row.update(
            classification=evaluation.classification,
            classification_confidence=evaluation.confidence,
            classification_rationale=evaluation.rationale,
            similar_ids=list(evaluation.similar_ids),
            embedding=vector,
        )
        self.store.run("learning/create_feedback_record", {"row": row})
        self.index.add(row["id"], vector)
        self.after_capture()
        return self.records.get(GetFeedbackRequest(id=row["id"]))

    def _claim_row(self, task_id: str, action: str, claim_id: object) -> dict[str, Any]:
        """A claim review's record fields. A claim the LLM extracted is the claim extractor's output: rejecting it
        is a correction ``extracted -> rejected`` of that component (with the passage and the topic it was
        extracted from), restoring it keeps its label ``adopted``. A claim a person wrote concerns no model."""
        rows = self.store.run("learning/claim_snapshot", {"task_id": task_id, "claim_id": claim_id})
        snap = to_plain(rows[0]) if rows else {}
        if not snap.get("extracted"):
            return {"kind": action, "component": "claims", "claim_id": claim_id, "hypothesis": snap.get("hypothesis")}
        rejected = action == "claim_reject"
        return {
            "kind": "correction" if rejected else "confirmation",
            "component": EXTRACTION_RECORDS,
            "claim_id": claim_id,
            "predicted_label": "extracted" if rejected else "adopted",
            "correct_label": "rejected" if rejected else "adopted",
            "premise": snap.get("premise"),
            "hypothesis": snap.get("hypothesis"),
            "topic": snap.get("topic"),
            "rules_version": snap.get("rules_version"),
        }
