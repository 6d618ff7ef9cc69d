"""Lyra learns from its reviewers (issue 15; seed 004's loop: capture -> store -> evaluate -> propose -> meta-review
-> deploy).

* **Capture and store.** Every ``feedback`` action becomes a :class:`FeedbackRecord` node (append-only) with its
  target, the verdict it concerns (judge id, rule-set version, label, confidence), the reviewer, tags and comment; an
  ``edge_correct`` that keeps the relation is a positive record. The record's context (claim, passage, labels,
  comment) is embedded into a FAISS index under ``<state_dir>/faiss/feedback`` (rebuilt from the embeddings kept on
  the nodes when missing or out of step), which :meth:`LearningService.find_similar` searches.
* **Evaluate** at once, by the deterministic rules of :mod:`lyra.services.learning_rules`.
* **Propose** in batches (:meth:`LearningService.generate_proposals`; also after
  ``LYRA_LEARNING_AUTO_PROPOSE_AFTER`` new corrections): per stance error pattern with enough evidence, a
  ``GUIDELINE`` for the stance LLM's prompts, a few-shot ``NEGATIVE_EXAMPLE`` for them, and a ``NEGATIVE_EXAMPLE``
  set for the trained judge (its example memory and combiner fit); from rejected claims the LLM extracted, a
  ``NEGATIVE_EXAMPLE`` for claim extraction (the extractor drops those claims; measured by extracting again from
  their passages, :meth:`LearningService.measure_extraction`); for a domain whose verdicts reviewers keep
  correcting, a ``CONSTRAINT`` lowering its ranking weight (measured by ranking the tasks again,
  :meth:`LearningService.measure_ranking`); a ``CALIBRATION_REFIT`` when the reviewed samples give a calibrator that
  lowers the held-out ECE. Reviewers may also write a guideline for a prompt's component
  (:meth:`LearningService.propose_rule`).
  A stance-LLM proposal's predicted effect is measured before anyone approves: the corrected pairs and a small
  regression set of real labelled pairs are judged with the active rules and with the active rules plus the
  proposal (accuracy, macro-F1, ECE and their deltas). Proposals of a pattern that already has a pending one join
  it as more evidence; one that contradicts an active rule is flagged with that rule.
* **Meta-review.** ``approve_proposal`` needs ``LYRA_LEARNING_APPROVALS_REQUIRED`` distinct reviewers, or one
  with an ``override_reason`` (logged); ``reject_proposal`` needs a reason. Every review is a node of its own.
* **Deploy.** An approved rule joins a new rule-set version of its component (append-only ``RuleSetVersion``
  nodes); the prompts read the active rules through :class:`RuleBook` at every judgement; judges carry the version
  in their id (the NLI cache key), and ingest stamps it on the edges. ``retire_rule`` and ``rollback_rules`` write
  a new version too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from lyra.core.errors import ConflictError, InvalidInputError, NotFoundError
from lyra.core.ids import new_id
from lyra.core.settings import Settings
from lyra.graph.store import GraphStore, Transaction, to_plain
from lyra.ml.calibration import MIN_FIT_SAMPLES
from lyra.ml.claims import ClaimExtractor
from lyra.ml.evaluation import LabelledPair, load_pairs, score
from lyra.ml.learned_rules import (
    CITATION_DETECTION,
    CITATION_USEFULNESS,
    CLAIM_EXTRACTION,
    EVIDENCE_RANKING,
    STANCE_LLM,
    STANCE_TRAINED,
    LearnedRules,
    RuleSource,
)
from lyra.ml.protocols import Embedder, NLIJudge
from lyra.ml.stance_training import first_per_label
from lyra.ml.vector_index import FragmentIndex
from lyra.models.learning import (
    ANONYMOUS,
    ApproveProposalRequest,
    Conflict,
    FeedbackForComponentRequest,
    FeedbackRecord,
    FeedbackRecordList,
    FindSimilarRequest,
    GenerateProposalsRequest,
    GenerateProposalsResponse,
    GetFeedbackRequest,
    GetProposalRequest,
    ListProposalsRequest,
    ListRulesRequest,
    Proposal,
    ProposalList,
    ProposeRuleRequest,
    RejectProposalRequest,
    RetireRuleRequest,
    Review,
    RollbackRulesRequest,
    Rule,
    RuleList,
    RuleSet,
    SimilarRecord,
    SimilarRecords,
)
from lyra.models.trust import FeedbackRequest, FeedbackResponse
from lyra.services.calibration import CalibrationService
from lyra.services.learning_rules import (
    EXTRACTION_PATTERN,
    EXTRACTION_RECORDS,
    STANCE_GUIDELINES,
    ActiveRuleFacts,
    ApprovalFacts,
    Evaluation,
    RecordFacts,
    check_approval,
    classify,
    conflicts,
    takes_effect,
)

log = logging.getLogger(__name__)

RULE_COMPONENTS = (
    STANCE_LLM, STANCE_TRAINED, CLAIM_EXTRACTION, CITATION_USEFULNESS, CITATION_DETECTION, EVIDENCE_RANKING,
)  # fmt: skip
DOMAIN_PENALTY = 0.5  # the ranking factor a CONSTRAINT proposes for a domain whose verdicts reviewers keep correcting
DOMAIN_CORRECTION_RATE = 0.5  # ... when at least this share of its reviewed verdicts were corrected
DOMAIN_MIN_TASKS = 2  # ... in at least this many tasks
HISTORY_LIMIT = 5000  # records of a component the evaluator and the proposer read at most
PAGE = 2000
LEARNED_SECTION = "the prompt's 'Learned rules' section (before the untrusted input)"
INSERTION_POINTS = {
    CLAIM_EXTRACTION: f"config/prompts/claim_extraction.j2: {LEARNED_SECTION}",
    CITATION_USEFULNESS: f"config/prompts/citation_relevance.j2 and citation_usefulness.j2: {LEARNED_SECTION}; read "
    "only when LYRA_CITATION_STAGE2_RATER is an LLM rater (llm-yes-no, llm-scale)",
    CITATION_DETECTION: f"config/prompts/detect_citation.j2: {LEARNED_SECTION}",
    STANCE_LLM: "config/prompts/stance_question.j2 and stance_three_way.j2: the 'Learned rules' section after the "
    "instructions, before the examples",
    "stance_llm_example": "the few-shot examples of both stance prompts (config/prompts/stance_examples.yaml): after "
    "the built-in ones",
    STANCE_TRAINED: "the trained judge's training data: <state_dir>/learning/stance_trained/data_v<N>.jsonl, "
    "read by `lyra train stance --calibration-extra`",
    "claim_extraction_example": "the claim extractor's output filter (lyra/ml/claims.py): extracted claims at cosine "
    ">= 0.95 to a rejected one are dropped",
    EVIDENCE_RANKING: "the ranking weight of the domain's passages (claim-fragment pairs to judge) and web results: "
    "its category weight times the factor",
    "calibration": "the active NLI calibrator (calibration_rollback)",
}
MAX_REJECTED_SHOWN = 5  # rejected claims a claim-extraction example rule shows the LLM (the most recent)
EXTRACTION_CASES = 3  # passages re-extracted per set (rejected, kept) when a claim-extraction rule is measured
SAME_CLAIM = 0.9  # cosine at which an extracted claim is the same claim (ingest's de-duplication threshold)
LABEL_ANSWERS = {"entailment": ("yes", "no"), "contradiction": ("no", "yes"), "neutral": ("no", "no")}
Progress = Callable[[dict[str, Any]], None]  # a proposal batch's stage and counters (JobContext.report)


def _facts(record: dict[str, Any]) -> RecordFacts:
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


def context_text(record: dict[str, Any]) -> str:
    """What a record's embedding is made of: the claim, the passage, the labels, the comment."""
    parts = []
    if record.get("hypothesis"):
        parts.append(f"claim: {record['hypothesis']}")
    if record.get("premise"):
        parts.append(f"passage: {str(record['premise'])[:1500]}")
    if record.get("predicted_label") or record.get("correct_label"):
        parts.append(f"labels: {record.get('predicted_label')} -> {record.get('correct_label')}")
    if record.get("domain"):
        parts.append(f"domain: {record['domain']}")
    parts.append(f"{record['kind']}: {record.get('comment') or ''}")
    return "\n".join(parts)


def _metrics(pairs: Sequence[LabelledPair], results: Sequence[Any], judge: str) -> dict[str, Any]:
    if not pairs:
        return {"pairs": 0}
    evaluation = score(pairs, results, judge, 0.0)
    return {
        "pairs": evaluation.pairs,
        "accuracy": round(evaluation.accuracy, 4),
        "macro_f1": round(evaluation.macro_f1, 4),
        "ece": round(evaluation.ece, 4),
    }


def _regression_delta(effect: dict[str, Any]) -> float | None:
    """The measured change on the regression set (None when not measured or the set was empty): macro-F1 for a
    judge, the rate of adopted claims extracted again for claim extraction."""
    regression = effect.get("regression") if effect.get("measured") else None
    if not isinstance(regression, dict) or not regression.get("pairs"):
        return None
    deltas = regression.get("delta", {})
    delta = deltas.get("macro_f1", deltas.get("kept_rate"))  # a judge's macro-F1; claim extraction's kept claims
    return float(delta) if delta is not None else None


def _deltas(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    return {k: round(after[k] - before[k], 4) for k in ("accuracy", "macro_f1", "ece") if k in before and k in after}


def predicted_text(effect: dict[str, Any]) -> str:
    """A proposal's predicted effect in a few words, whatever its kind (for the report page)."""

    def change(part: dict[str, Any], key: str) -> str:
        before, after = part.get("before", {}).get(key), part.get("after", {}).get(key)
        return f"{before} -> {after}" if before is not None and after is not None else "-"

    if not effect.get("measured"):
        return "not measured"
    if effect.get("component") == CLAIM_EXTRACTION:
        return (
            f"rejected claims returned {change(effect.get('rejected', {}), 're_extracted_rate')}; "
            f"kept claims returned {change(effect.get('regression', {}), 'kept_rate')}"
        )
    if effect.get("component") == EVIDENCE_RANKING:
        return (
            f"corrected passages' mean rank {change(effect.get('corrected', {}), 'mean_rank')}, in the top "
            f"{effect.get('top_k')} {change(effect.get('corrected', {}), 'in_top_k')}; kept passages in the top "
            f"{change(effect.get('regression', {}), 'kept_rate')}"
        )
    if "corrected" in effect:
        corrected = effect["corrected"].get("delta", {}).get("accuracy")
        regression = effect.get("regression", {}).get("delta", {}).get("accuracy")
        text = f"accuracy {corrected:+.2f} on corrected pairs" if corrected is not None else "accuracy -"
        return text + (f", {regression:+.2f} on regression pairs" if regression is not None else "")
    return f"ECE {effect.get('ece_before', 0):.3f} -> {effect.get('ece_after', 0):.3f}"


def _rank_summary(ranked: Sequence[tuple[int, int]], top_k: int, rate: str) -> dict[str, Any]:
    """Where reviewed passages rank (1 = first) before and after a ranking rule: the mean rank and the share within
    the top ``top_k`` (named ``rate``), and their deltas."""
    if not ranked:
        return {"pairs": 0, "before": {}, "after": {}, "delta": {}}
    out: dict[str, Any] = {"pairs": len(ranked)}
    for i, side in enumerate(("before", "after")):
        positions = [pair[i] for pair in ranked]
        out[side] = {
            "pairs": len(ranked),
            "mean_rank": round(sum(positions) / len(positions), 3),
            rate: round(sum(p <= top_k for p in positions) / len(positions), 4),
        }
    out["delta"] = {key: round(out["after"][key] - out["before"][key], 4) for key in ("mean_rank", rate)}
    return out


# ----------------------------------------------------------------------------- rules in force
class RuleBook:
    """The active learned rules of each component as the prompts read them, re-read from Neo4j at most every
    ``refresh_seconds`` (and at once after a change made through this process)."""

    def __init__(self, store: GraphStore, refresh_seconds: float = 5.0) -> None:
        self.store = store
        self.refresh_seconds = refresh_seconds
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, LearnedRules]] = {}

    def invalidate(self) -> None:
        with self._lock:
            self._cache.clear()

    def rules(self, component: str) -> LearnedRules:
        with self._lock:
            cached = self._cache.get(component)
            if cached is not None and time.monotonic() - cached[0] < self.refresh_seconds:
                return cached[1]
        rules = self.load(component)
        with self._lock:
            self._cache[component] = (time.monotonic(), rules)
        return rules

    def load(self, component: str, version: int | None = None) -> LearnedRules:
        """The rules of ``component`` at ``version`` (default: the latest) as a prompt uses them."""
        rows = self.store.run("learning/rule_set", {"component": component, "version": version})
        if not rows:
            return LearnedRules(component)
        rule_set = to_plain(rows[0]["rule_set"])
        ids: list[str] = list(rule_set["rule_ids"])
        by_id = {
            r["id"]: r
            for r in (to_plain(row["rule"]) for row in self.store.run("learning/rules", {"component": component}))
        }
        guidelines: list[str] = []
        examples: list[dict[str, str]] = []
        constraints: list[dict[str, str]] = []
        for rule_id in ids:
            rule = by_id.get(rule_id)
            if rule is None:
                continue
            if rule["rule_type"] == "CONSTRAINT" and component == EVIDENCE_RANKING:
                constraints.append({str(k): str(v) for k, v in json.loads(rule["content"]).items()})
            elif rule["rule_type"] in ("GUIDELINE", "CONSTRAINT"):
                guidelines.append(str(rule["content"]))
            elif rule["rule_type"] in ("NEGATIVE_EXAMPLE", "POSITIVE_EXAMPLE") and component == STANCE_LLM:
                examples.append({str(k): str(v) for k, v in json.loads(rule["content"]).items()})
            elif rule["rule_type"] in ("NEGATIVE_EXAMPLE", "POSITIVE_EXAMPLE") and component in (
                STANCE_TRAINED,
                CLAIM_EXTRACTION,
            ):
                # labelled pairs that join the trained judge's combiner fit and memory while the rule is active;
                # rejected claims ({claim, reason}) the extraction prompt shows and the extractor drops
                examples.extend({str(k): str(v) for k, v in item.items()} for item in json.loads(rule["content"]))
        return LearnedRules(component, int(rule_set["version"]), tuple(guidelines), tuple(examples), tuple(constraints))

    def source(self, component: str) -> RuleSource:
        return lambda: self.rules(component)


# ----------------------------------------------------------------------------- similarity
class FeedbackIndex:
    """FAISS (exact inner product on L2-normalised vectors) over the records' context embeddings."""

    def __init__(self, store: GraphStore, path: Path, embedder: Callable[[], Embedder]) -> None:
        self.store = store
        self.path = path
        self._embedder = embedder
        self._index: FragmentIndex | None = None
        self._lock = threading.Lock()

    def embedder(self) -> Embedder:
        return self._embedder()

    def embed(self, text: str) -> list[float]:
        return [float(x) for x in self._embedder().embed([text])[0]]

    def _open(self) -> FragmentIndex:
        with self._lock:
            if self._index is not None:
                return self._index
            embedder = self._embedder()
            embedder.embed(["warm-up"])  # fixes the dimension
            index = FragmentIndex.load(self.path, embedder.dimension, kind="flat")
            in_graph = int(self.store.run("learning/feedback_record_count")[0]["records"])
            if len(index) != in_graph:
                log.info("feedback index has %d records, Neo4j %d: rebuilding from Neo4j", len(index), in_graph)
                index.rebuild(self._stream())
                index.save()
            self._index = index
            return index

    def _stream(self) -> Any:
        after = ""
        while True:
            rows = self.store.run("learning/feedback_embeddings_page", {"after": after, "limit": PAGE})
            for row in rows:
                yield row["id"], row["embedding"]
            if len(rows) < PAGE:
                return
            after = rows[-1]["id"]

    def add(self, record_id: str, vector: Sequence[float]) -> None:
        index = self._open()
        if index.add([record_id], np.asarray([vector], dtype=np.float32)):
            index.save()

    def search(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        return self._open().search(np.asarray([vector], dtype=np.float32), k=k)[0]


# ----------------------------------------------------------------------------- the service
class LearningService:
    def __init__(
        self,
        store: GraphStore,
        settings: Settings,
        calibration: CalibrationService,
        embedder: Callable[[], Embedder],
        judge_factory: Callable[[RuleSource, RuleSource], NLIJudge] | None = None,
        extractor_factory: Callable[[RuleSource], ClaimExtractor] | None = None,
        rank_task: Callable[[str, Sequence[LearnedRules]], list[dict[str, list[str]]]] | None = None,
    ) -> None:
        """``judge_factory(rules, examples)``: a stance judge of the configured kind whose LLM prompts read ``rules``
        and whose trained combiner is fitted with ``examples`` too; ``extractor_factory(rules)``: a claim extractor
        whose prompt reads ``rules``; ``rank_task(task_id, rule_sets)``: for each set of ``evidence_ranking`` rules,
        per claim of the task, its fragments in the order ingest ranks them under those rules. They measure
        proposals' predicted effects (None: those are not measured)."""
        self.store = store
        self.settings = settings
        self.calibration = calibration
        self.rulebook = RuleBook(store, settings.learning_rules_refresh_seconds)
        self.index = FeedbackIndex(store, settings.state_dir / "faiss" / "feedback", embedder)
        self._judge_factory = judge_factory
        self._extractor_factory = extractor_factory
        self._rank_task = rank_task
        # what the measuring judge reads, by component
        self._measure_rules = {c: LearnedRules(c) for c in (STANCE_LLM, STANCE_TRAINED)}
        self._measure_judge: NLIJudge | None = None
        self._measure_lock = threading.Lock()
        self._batch_lock = threading.Lock()
        self._last_refit_samples: int | None = None  # a refit that did not help is not tried again on the same data

    # ================================================================ capture and store
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
        history = [_facts(r) for r in self._records_of(row["component"]) if r["id"] != row["id"]]
        vector = self.index.embed(context_text(row))
        similar = self._similar_facts(vector, self.settings.learning_similarity_threshold, exclude=row["id"])
        evaluation = classify(_facts(row), history, similar, high_min=self.settings.learning_high_min)
        row.update(
            classification=evaluation.classification,
            classification_confidence=evaluation.confidence,
            classification_rationale=evaluation.rationale,
            similar_ids=list(evaluation.similar_ids),
            embedding=vector,
        )
        self.store.run("learning/create_feedback_record", {"row": row})
        self.index.add(row["id"], vector)
        self._maybe_auto_propose()
        return self.get_feedback(GetFeedbackRequest(id=row["id"]))

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

    def _records_of(self, component: str, limit: int = HISTORY_LIMIT) -> list[dict[str, Any]]:
        rows = self.store.run("learning/feedback_for_component", {"component": component, "limit": limit})
        return [to_plain(r["record"]) for r in rows]

    def _records(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        rows = [to_plain(r["record"]) for r in self.store.run("learning/feedback_records", {"ids": list(ids)})]
        order = {rid: i for i, rid in enumerate(ids)}
        return sorted(rows, key=lambda r: order.get(r["id"], 0))

    def _similar_facts(
        self, vector: Sequence[float], threshold: float, exclude: str, limit: int = 50
    ) -> list[tuple[RecordFacts, float]]:
        hits = [(rid, s) for rid, s in self.index.search(vector, limit + 1) if rid != exclude and s >= threshold]
        records = {r["id"]: r for r in self._records([rid for rid, _ in hits])}
        return [(_facts(records[rid]), s) for rid, s in hits if rid in records][:limit]

    @staticmethod
    def _record_model(record: dict[str, Any]) -> FeedbackRecord:
        fields = set(FeedbackRecord.model_fields)
        return FeedbackRecord.model_validate({k: v for k, v in record.items() if k in fields and v is not None})

    def get_feedback(self, request: GetFeedbackRequest) -> FeedbackRecord:
        rows = self._records([request.id])
        if not rows:
            raise NotFoundError(f"no feedback record {request.id!r}", hint="get_feedback_for_component lists them")
        return self._record_model(rows[0])

    def feedback_for_component(self, request: FeedbackForComponentRequest) -> FeedbackRecordList:
        return FeedbackRecordList(
            records=[self._record_model(r) for r in self._records_of(request.component, request.limit)]
        )

    def find_similar(self, request: FindSimilarRequest) -> SimilarRecords:
        """Records whose context is at least ``threshold`` similar (cosine) to the record's, most similar first."""
        rows = self._records([request.id])
        if not rows:
            raise NotFoundError(f"no feedback record {request.id!r}")
        vector = self.index.embed(context_text(rows[0]))
        hits = [(rid, s) for rid, s in self.index.search(vector, request.limit + 1) if rid != request.id]
        hits = [(rid, s) for rid, s in hits if s >= request.threshold][: request.limit]
        records = {r["id"]: r for r in self._records([rid for rid, _ in hits])}
        return SimilarRecords(
            id=request.id,
            threshold=request.threshold,
            similar=[
                SimilarRecord(record=self._record_model(records[rid]), similarity=round(s, 4))
                for rid, s in hits
                if rid in records
            ],
        )

    # ================================================================ proposals
    def _maybe_auto_propose(self) -> None:
        every = self.settings.learning_auto_propose_after
        if not every:
            return
        waiting = int(self.store.run("learning/records_since_last_batch")[0]["records"])
        if waiting < every or not self._batch_lock.acquire(blocking=False):
            return

        def run() -> None:
            try:
                self._generate(GenerateProposalsRequest())
            except Exception:  # a background batch must not take the feedback call down
                log.exception("automatic proposal batch failed")
            finally:
                self._batch_lock.release()

        threading.Thread(target=run, name="lyra-learning-batch", daemon=True).start()

    def generate_proposals(
        self, request: GenerateProposalsRequest, progress: Progress | None = None
    ) -> GenerateProposalsResponse:
        """One batch: group the stance corrections by error pattern and propose for each group with enough evidence
        (see the module's docstring). Records already evidence of a proposal are not used twice. Measuring runs the
        judge (minutes): the doors queue the batch as a job (``lyra.services.learning_jobs``), whose ``progress``
        receives the stage and counters after each step (it may raise to stop the batch)."""
        with self._batch_lock:
            return self._generate(request, progress)

    def _generate(
        self, request: GenerateProposalsRequest, progress: Progress | None = None
    ) -> GenerateProposalsResponse:
        tell: Progress = progress or (lambda _progress: None)
        tell({"stage": "reading corrections"})
        records = self._records_of("stance")
        used_by = self._used_record_ids()
        used = set().union(*used_by.values())
        facts = [_facts(r) for r in records]
        labels_of_edge: dict[str, set[str]] = {}
        for f in facts:
            if f.edge_id and f.judged_label:
                labels_of_edge.setdefault(f.edge_id, set()).add(f.judged_label)
        ambiguous_edges = {edge for edge, labels in labels_of_edge.items() if len(labels) > 1}  # reviewers disagree
        groups: dict[str, list[dict[str, Any]]] = {}
        for record, fact in zip(records, facts, strict=True):
            if fact.pattern is None or fact.id in used or fact.edge_id in ambiguous_edges:
                continue
            groups.setdefault(fact.pattern, []).append(record)
        out = GenerateProposalsResponse(created=[])
        active = self._active_rule_facts()
        kinds = [(STANCE_LLM, "GUIDELINE"), (STANCE_TRAINED, "NEGATIVE_EXAMPLE")]
        if self.settings.learning_propose_examples:
            kinds.insert(1, (STANCE_LLM, "NEGATIVE_EXAMPLE"))
        rejected = self._rejected_extractions(used)
        domains = self._domain_reviews(records, used_by.get(EVIDENCE_RANKING, set()))
        steps = sum(len(kinds) for p in groups if p in STANCE_GUIDELINES) + bool(rejected) + len(domains) + 1
        done = 0

        def step(stage: str) -> None:  # before each proposal is placed (measured: the slow part) and the refit
            tell(
                {
                    "stage": stage,
                    "records": len(records),
                    "steps": steps,
                    "steps_done": done,
                    "created": len(out.created),
                    "consolidated": len(out.consolidated),
                    "skipped": len(out.skipped),
                }
            )

        for pattern, group in sorted(groups.items()):
            group.sort(key=lambda r: r["created_at"])
            if pattern not in STANCE_GUIDELINES:
                out.skipped.append(f"{pattern}: no rule template for this pattern")
                continue
            key = f"stance:{pattern}"
            for component, rule_type in kinds:
                step(f"proposing {component} {rule_type} for {pattern}")
                self._place(
                    out, component, rule_type, key, pattern, group, active,
                    partial(self._propose, component, rule_type, key, pattern, group, active, request.measure),
                )  # fmt: skip
                done += 1
        if rejected:
            key = f"claims:{EXTRACTION_PATTERN}"
            step(f"proposing {CLAIM_EXTRACTION} NEGATIVE_EXAMPLE")
            self._place(
                out, CLAIM_EXTRACTION, "NEGATIVE_EXAMPLE", key, EXTRACTION_PATTERN, rejected, active,
                partial(self._propose_extraction, key, rejected, active, request.measure),
            )  # fmt: skip
            done += 1
        for domain, (corrected, kept) in sorted(domains.items()):
            key = f"ranking:domain:{domain}"
            step(f"proposing {EVIDENCE_RANKING} CONSTRAINT for {domain}")
            self._place(
                out, EVIDENCE_RANKING, "CONSTRAINT", key, f"domain {domain}", corrected, active,
                partial(self._propose_constraint, key, domain, corrected, kept, active, request.measure),
            )  # fmt: skip
            done += 1
        step("calibration refit")
        refit = self._propose_refit()
        if isinstance(refit, Proposal):
            out.created.append(refit)
        elif refit:
            out.skipped.append(refit)
        done += 1
        step("done")
        return out

    def _place(
        self,
        out: GenerateProposalsResponse,
        component: str,
        rule_type: str,
        key: str,
        pattern: str,
        group: list[dict[str, Any]],
        active: list[ActiveRuleFacts],
        make: Callable[[], Proposal],
    ) -> None:
        """New records of a pattern join its pending proposal (consolidation), are skipped when an active rule
        covers the pattern or when there are too few, and otherwise become a new proposal (``make``)."""
        ids = [r["id"] for r in group]
        pending = self.store.run(
            "learning/pending_proposal_by_key", {"component": component, "rule_type": rule_type, "key": key}
        )
        if pending:  # consolidated: the records join the pending proposal as more evidence
            self.store.run("learning/add_proposal_evidence", {"id": pending[0]["id"], "evidence_ids": ids})
            out.consolidated.setdefault(pending[0]["id"], []).extend(ids)
        elif any(r.component == component and r.rule_type == rule_type and r.key == key for r in active):
            out.skipped.append(f"{component} {pattern}: an active rule covers it (its effect is tracked)")
        elif len(group) < self.settings.learning_min_evidence:
            out.skipped.append(
                f"{component} {pattern}: {len(group)} new correction(s), {self.settings.learning_min_evidence} needed"
            )
        else:
            out.created.append(make())

    def _rejected_extractions(self, used: set[str]) -> list[dict[str, Any]]:
        """Rejections of extracted claims not used by a proposal yet, oldest first, leaving out claims a reviewer
        restored (reviewers disagree) and records without the passage the claim came from."""
        records = self._records_of(EXTRACTION_RECORDS)
        restored = {r.get("claim_id") for r in records if r.get("correct_label") == "adopted"}
        group = [
            r
            for r in records
            if r["kind"] == "correction"
            and r["id"] not in used
            and r.get("claim_id") not in restored
            and r.get("premise")
            and r.get("hypothesis")
        ]
        return sorted(group, key=lambda r: r["created_at"])

    def _domain_reviews(
        self, records: list[dict[str, Any]], used: set[str]
    ) -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
        """Per domain whose verdicts reviewers keep correcting — at least ``DOMAIN_CORRECTION_RATE`` of its reviewed
        stance edges corrected, in ``DOMAIN_MIN_TASKS`` tasks or more — its corrections not yet used by a ranking
        proposal (``used``; oldest first), and the reviews that kept a verdict in those tasks, of any domain (the
        regression set: the domain's own good passages may fall, the others' rise)."""
        by_domain: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
        for record in records:
            domain = record.get("domain")
            if not domain or record["kind"] not in ("correction", "confirmation"):
                continue
            corrected, kept = by_domain.setdefault(str(domain).lower(), ([], []))
            (corrected if record["kind"] == "correction" else kept).append(record)
        out: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
        for domain, (corrected, kept) in by_domain.items():
            rate = len(corrected) / (len(corrected) + len(kept))
            if rate < DOMAIN_CORRECTION_RATE or len({r["task_id"] for r in corrected}) < DOMAIN_MIN_TASKS:
                continue
            fresh = sorted((r for r in corrected if r["id"] not in used), key=lambda r: r["created_at"])
            tasks = {r["task_id"] for r in fresh}
            if fresh:
                out[domain] = (fresh, [r for r in records if r["kind"] == "confirmation" and r["task_id"] in tasks])
        return out

    def _propose_constraint(
        self,
        key: str,
        domain: str,
        corrected: list[dict[str, Any]],
        kept: list[dict[str, Any]],
        active: list[ActiveRuleFacts],
        measure: bool,
    ) -> Proposal:
        """A CONSTRAINT for evidence ranking: the domain's passages and web results rank at ``DOMAIN_PENALTY`` of
        their weight; measured by ranking the evidence's tasks again with and without it."""
        own = len([r for r in kept if str(r.get("domain") or "").lower() == domain])
        rate = len(corrected) / (len(corrected) + own)
        constraint = {
            "domain": domain,
            "factor": str(DOMAIN_PENALTY),
            "why": f"{len(corrected)} of {len(corrected) + own} reviewed verdicts on its passages corrected",
        }
        current = self.rulebook.rules(EVIDENCE_RANKING)
        proposed = replace(current, constraints=(*current.constraints, constraint))
        effect: dict[str, Any] = self.measure_ranking(proposed, corrected, kept) if measure else {"measured": False}
        effect["correction_rate"] = round(rate, 4)
        return self._store_proposal(
            EVIDENCE_RANKING, "CONSTRAINT", key, f"domain {domain}", json.dumps(constraint), EVIDENCE_RANKING,
            effect, corrected, active,
        )  # fmt: skip

    def measure_ranking(
        self, proposed: LearnedRules, corrected: Sequence[dict[str, Any]], kept: Sequence[dict[str, Any]]
    ) -> dict[str, Any]:
        """Rank the fragments of every claim of the evidence's tasks as ingest does, with the rules in force and
        with ``proposed``: where the corrected verdicts' passages and the kept ones' (the regression set) land —
        their mean rank (1 = first) and the share within the top ``LYRA_NLI_TOP_K`` (the pairs ingest judges)."""
        if self._rank_task is None:
            return {"measured": False, "why": "no ranker to measure with"}
        current = self.rulebook.rules(EVIDENCE_RANKING)
        started = time.perf_counter()
        reviewed = [("corrected", list(corrected)), ("regression", list(kept))]
        tasks = sorted({str(r["task_id"]) for _, group in reviewed for r in group})
        ranked_tasks = {t: self._rank_task(t, (current, proposed)) for t in tasks}
        orders = {side: {t: ranked_tasks[t][i] for t in tasks} for i, side in enumerate(("before", "after"))}
        fragments = self._edge_fragments([r["edge_id"] for _, group in reviewed for r in group if r.get("edge_id")])
        top_k = self.settings.nli_top_k
        out: dict[str, Any] = {"measured": True, "component": EVIDENCE_RANKING, "top_k": top_k}
        for name, group in reviewed:
            cases = []
            for record in group:
                fragment = fragments.get(str(record.get("edge_id")))
                ranks: dict[str, int | None] = {}
                for side in ("before", "after"):
                    order = orders[side].get(str(record["task_id"]), {}).get(str(record.get("claim_id")), [])
                    ranks[side] = order.index(fragment) + 1 if fragment in order else None
                cases.append(
                    {
                        "id": record["id"],
                        "task_id": record["task_id"],
                        "claim_id": record.get("claim_id"),
                        "fragment_id": fragment,
                        "domain": record.get("domain"),
                        **ranks,
                    }
                )
            ranked = [(c["before"], c["after"]) for c in cases if c["before"] is not None and c["after"] is not None]
            out[name] = {**_rank_summary(ranked, top_k, "in_top_k" if name == "corrected" else "kept_rate")}
            out[name]["cases"] = cases
        out["rules_version_before"] = current.version
        out["seconds"] = round(time.perf_counter() - started, 1)
        return out

    def _edge_fragments(self, edge_ids: list[str]) -> dict[str, str]:
        """The fragment of each stance edge (by edge id) that still exists."""
        rows = self.store.run("learning/edge_fragments", {"edge_ids": edge_ids}) if edge_ids else []
        return {str(r["edge_id"]): str(r["fragment_id"]) for r in rows}

    def _used_record_ids(self) -> dict[str, set[str]]:
        """Per component, the feedback records its proposals (of any status) already rest on."""
        ids = [
            r["id"]
            for r in self.store.run("learning/list_proposals", {"status": None, "component": None, "limit": 10_000})
        ]
        used: dict[str, set[str]] = {}
        for proposal in self._proposals(ids):
            used.setdefault(proposal.component, set()).update(proposal.evidence_ids)
        return used

    def _active_rule_facts(self) -> list[ActiveRuleFacts]:
        out: list[ActiveRuleFacts] = []
        for rule in self._rules(None):
            if rule["status"] == "active":
                out.append(
                    ActiveRuleFacts(rule["id"], rule["component"], rule["rule_type"], rule["key"], rule["content"])
                )
        return out

    def _propose(
        self,
        component: str,
        rule_type: str,
        key: str,
        pattern: str,
        group: list[dict[str, Any]],
        active: list[ActiveRuleFacts],
        measure: bool,
    ) -> Proposal:
        """A stance proposal of ``rule_type`` for ``component`` from a pattern's corrections, measured."""
        pairs = [
            LabelledPair(id=r["id"], premise=r["premise"], hypothesis=r["hypothesis"], label=r["correct_label"])
            for r in group
            if r.get("premise") and r.get("hypothesis")
        ]
        current = self.rulebook.rules(STANCE_LLM)
        if rule_type == "GUIDELINE":
            content = STANCE_GUIDELINES[pattern]
            proposed = replace(current, guidelines=(*current.guidelines, content))
            effect = self.measure_rules(proposed, pairs) if measure else {"measured": False}
        elif component == STANCE_LLM:  # a few-shot example made from the group's most confident mistake
            example = self.few_shot_example(max(group, key=lambda r: r.get("predicted_confidence") or 0.0))
            content = json.dumps(example, ensure_ascii=False)
            proposed = replace(current, examples=(*current.examples, example))
            effect = self.measure_rules(proposed, pairs) if measure else {"measured": False}
        else:  # labelled pairs for the trained judge: they join its combiner's fit while the rule is active
            rows = [{"id": p.id, "premise": p.premise, "hypothesis": p.hypothesis, "label": p.label} for p in pairs]
            content = json.dumps(rows, ensure_ascii=False)
            trained = self.rulebook.rules(STANCE_TRAINED)
            examples = tuple({k: str(v) for k, v in row.items()} for row in rows)
            proposed = replace(trained, examples=(*trained.examples, *examples))
            effect = self.measure_rules(proposed, pairs) if measure else {"measured": False}
        insertion = "stance_llm_example" if component == STANCE_LLM and rule_type != "GUIDELINE" else component
        return self._store_proposal(component, rule_type, key, pattern, content, insertion, effect, group, active)

    def _propose_extraction(
        self, key: str, group: list[dict[str, Any]], active: list[ActiveRuleFacts], measure: bool
    ) -> Proposal:
        """A NEGATIVE_EXAMPLE for claim extraction: the most recent rejected claims (with the reviewers' reasons),
        which the extractor drops when the LLM returns them again; measured by extracting again from their passages."""
        shown = [{"claim": str(r["hypothesis"]), "reason": str(r.get("comment") or "")} for r in group]
        shown = list({ex["claim"]: ex for ex in shown}.values())[-MAX_REJECTED_SHOWN:]
        current = self.rulebook.rules(CLAIM_EXTRACTION)
        proposed = replace(current, examples=(*current.examples, *shown))
        effect = self.measure_extraction(proposed, group) if measure else {"measured": False}
        content = json.dumps(shown, ensure_ascii=False)
        return self._store_proposal(
            CLAIM_EXTRACTION, "NEGATIVE_EXAMPLE", key, EXTRACTION_PATTERN, content, "claim_extraction_example",
            effect, group, active,
        )  # fmt: skip

    def measure_extraction(self, proposed: LearnedRules, rejected: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Extract claims again from the passages of the most recent rejected claims, and of as many claims the
        LLM extracted that reviewers kept (the regression set), with the rules in force and with ``proposed``: how
        often the rejected claim (and the kept one) comes back, as an extracted claim at cosine >= ``SAME_CLAIM``."""
        if self._extractor_factory is None:
            return {"measured": False, "why": "no LLM to measure with"}
        current = self.rulebook.rules(CLAIM_EXTRACTION)
        proposed = replace(proposed, version=current.version + 1)
        cases = [
            {"id": r["id"], "claim": r["hypothesis"], "passage": r["premise"], "topic": r.get("topic") or ""}
            for r in list(rejected)[-EXTRACTION_CASES:]
        ]
        exclude = [r.get("claim_id") for r in rejected]
        kept = [
            {"id": row["claim_id"], "claim": row["claim"], "passage": row["passage"], "topic": row["topic"] or ""}
            for row in self.store.run(
                "learning/kept_extracted_claims", {"exclude_ids": exclude, "limit": EXTRACTION_CASES}
            )
        ]
        extractor = self._extractor_factory(lambda: current)
        embedder = self.index.embedder()
        started = time.perf_counter()
        out: dict[str, Any] = {"measured": True, "component": CLAIM_EXTRACTION}
        # the same prompt gives the same answer: then the difference is the rule's alone (the LLM varies per call)
        same_prompt = proposed.guidelines == current.guidelines
        for name, group in (("rejected", cases), ("regression", kept)):
            rows = []
            for case in group:
                passage, topic = str(case["passage"]), str(case["topic"])
                asked = extractor.ask(passage, topic, current)
                again = asked if same_prompt else extractor.ask(passage, topic, proposed)
                found = {"before": extractor.keep(asked, current), "after": extractor.keep(again, proposed)}
                vectors = embedder.embed([str(case["claim"]), *found["before"], *found["after"]])
                scores = vectors[1:] @ vectors[0]
                n = len(found["before"])
                rows.append(
                    {
                        "id": case["id"],
                        "claim": case["claim"],
                        "before": bool(n and float(scores[:n].max()) >= SAME_CLAIM),
                        "after": bool(len(scores) > n and float(scores[n:].max()) >= SAME_CLAIM),
                        "claims_before": found["before"],
                        "claims_after": found["after"],
                    }
                )
            rate = "re_extracted_rate" if name == "rejected" else "kept_rate"
            summary = {
                side: {
                    "pairs": len(rows),
                    rate: round(sum(r[side] for r in rows) / len(rows), 4) if rows else 0.0,
                    "claims_per_passage": round(sum(len(r[f"claims_{side}"]) for r in rows) / len(rows), 2)
                    if rows
                    else 0.0,
                }
                for side in ("before", "after")
            }
            out[name] = {
                **summary,
                "pairs": len(rows),
                "delta": {
                    key: round(summary["after"][key] - summary["before"][key], 4)
                    for key in (rate, "claims_per_passage")
                }
                if rows
                else {},
                "cases": rows,
            }
        out["rules_version_before"] = current.version
        out["seconds"] = round(time.perf_counter() - started, 1)
        return out

    def _store_proposal(
        self,
        component: str,
        rule_type: str,
        key: str,
        pattern: str,
        content: str,
        insertion: str,
        effect: dict[str, Any],
        group: list[dict[str, Any]],
        active: list[ActiveRuleFacts],
    ) -> Proposal:
        """Write a pending proposal with its evidence (``group``), its classification, its conflicts with the
        ``active`` rules and its predicted effect."""
        history = [_facts(r) for r in group[:-1]]
        evaluation: Evaluation = classify(_facts(group[-1]), history, high_min=self.settings.learning_high_min)
        reviewers = sorted({r["reviewer_id"] for r in group})
        comments = [r["comment"] for r in group if r.get("comment")]
        summary = (
            f"{len(group)} corrections {pattern} by {', '.join(reviewers)} on "
            f"{len({r.get('claim_id') for r in group})} claims in {len({r['task_id'] for r in group})} tasks"
            + (f"; comments: {' | '.join(c[:120] for c in comments[:3])}" if comments else "")
        )
        found = conflicts(component, key, active)
        row = {
            "id": new_id("prp"),
            "rule_type": rule_type,
            "component": component,
            "key": key,
            "content": content,
            "insertion_point": INSERTION_POINTS[insertion],
            "evidence_summary": summary,
            "classification": evaluation.classification,
            "classification_confidence": evaluation.confidence,
            "predicted_effect": json.dumps(effect),
            "conflicts": json.dumps([{"rule_id": r.id, "rule_content": r.content, "reason": why} for r, why in found]),
        }
        self.store.run("learning/create_proposal", {"row": row, "evidence_ids": [r["id"] for r in group]})
        return self.get_proposal(GetProposalRequest(id=str(row["id"])))

    def _propose_refit(self) -> Proposal | str | None:
        """A CALIBRATION_REFIT when the reviewed samples give a calibrator that lowers the held-out ECE."""
        if self.store.run(
            "learning/pending_proposal_by_key",
            {"component": "calibration", "rule_type": "CALIBRATION_REFIT", "key": "calibration:refit"},
        ):
            return "calibration: a refit proposal is pending"
        samples = int(self.calibration.stats()["samples"])
        if samples < MIN_FIT_SAMPLES:
            return f"calibration: {samples} reviewed samples, {MIN_FIT_SAMPLES} needed for a refit"
        earlier = [
            json.loads(p.content).get("samples")
            for p in self.list_proposals(ListProposalsRequest(component="calibration", limit=1)).proposals
        ]
        if (earlier and earlier[0] == samples) or self._last_refit_samples == samples:
            return f"calibration: no new reviewed samples since the last refit proposal ({samples})"
        try:  # stores the fitted calibrator as an inactive version (for inspection)
            fitted = self.calibration.fit("platt", activate=False)
        except InvalidInputError as exc:
            return f"calibration: {exc.reason}"
        self._last_refit_samples = samples
        if not fitted.get("improves"):
            return (
                f"calibration: a refit would not lower the held-out ECE "
                f"({fitted['before']['ece']:.3f} -> {fitted['after']['ece']:.3f})"
            )
        effect = {
            "measured": True,
            "on": f"{fitted['holdout_samples']} held-out reviewed samples",
            "ece_before": fitted["before"]["ece"],
            "ece_after": fitted["after"]["ece"],
            "brier_before": fitted["before"]["brier"],
            "brier_after": fitted["after"]["brier"],
        }
        row = {
            "id": new_id("prp"),
            "rule_type": "CALIBRATION_REFIT",
            "component": "calibration",
            "key": "calibration:refit",
            "content": json.dumps({"calibrator_version": fitted["version"], "method": "platt", "samples": samples}),
            "insertion_point": INSERTION_POINTS["calibration"],
            "evidence_summary": f"{fitted['train_samples'] + fitted['holdout_samples']} reviewed samples",
            "classification": "generalizable_high",
            "classification_confidence": 0.9,
            "predicted_effect": json.dumps(effect),
            "conflicts": "[]",
        }
        self.store.run("learning/create_proposal", {"row": row, "evidence_ids": []})
        return self.get_proposal(GetProposalRequest(id=str(row["id"])))

    def propose_rule(self, request: ProposeRuleRequest) -> Proposal:
        """A guideline written by a reviewer, for any component; the same meta-review as generated proposals.
        A stance-LLM guideline is measured on the regression set (and the evidence records' pairs)."""
        reviewer = request.reviewer_id or ANONYMOUS
        evidence = self._records(request.evidence_ids) if request.evidence_ids else []
        missing = sorted(set(request.evidence_ids) - {r["id"] for r in evidence})
        if missing:
            raise NotFoundError(f"no feedback record {missing[0]!r}", hint="get_feedback_for_component lists them")
        if request.component == EVIDENCE_RANKING:
            raise InvalidInputError(
                "component",
                "evidence_ranking takes CONSTRAINT rules, which are proposed from corrected verdicts of a domain's "
                "passages (generate_proposals), not written guidelines",
            )
        active = self._active_rule_facts()
        if any(r.component == request.component and r.content == request.content for r in active):
            raise ConflictError(f"an active {request.component} rule already says exactly this")
        effect: dict[str, Any] = {"measured": False, "why": "no labelled set to measure this component on"}
        if request.component == STANCE_LLM:
            pairs = [
                LabelledPair(id=r["id"], premise=r["premise"], hypothesis=r["hypothesis"], label=r["correct_label"])
                for r in evidence
                if r.get("premise") and r.get("hypothesis") and r.get("correct_label")
            ]
            current = self.rulebook.rules(STANCE_LLM)
            proposed = replace(current, guidelines=(*current.guidelines, request.content))
            effect = self.measure_rules(proposed, pairs) if request.measure else {"measured": False}
        digest = hashlib.sha256(request.content.encode("utf-8")).hexdigest()[:10]
        row = {
            "id": new_id("prp"),
            "rule_type": "GUIDELINE",
            "component": request.component,
            "key": f"{request.component}:reviewer:{digest}",
            "content": request.content,
            "insertion_point": INSERTION_POINTS.get(request.component, LEARNED_SECTION),
            "evidence_summary": f"written by {reviewer}: {request.reason}",
            "classification": "reviewer",
            "classification_confidence": 1.0,
            "predicted_effect": json.dumps(effect),
            "conflicts": "[]",
        }
        self.store.run("learning/create_proposal", {"row": row, "evidence_ids": [r["id"] for r in evidence]})
        return self.get_proposal(GetProposalRequest(id=str(row["id"])))

    # ---------------------------------------------------------------- predicted effect
    def regression_pairs(self, exclude: Sequence[LabelledPair] = ()) -> list[LabelledPair]:
        """The first ``learning_regression_per_label`` pairs per label of the regression set (none of ``exclude``)."""
        per_label = self.settings.learning_regression_per_label
        path = self.settings.learning_regression_set
        if not per_label or not path.is_file():
            return []
        skip = {(p.premise, p.hypothesis) for p in exclude}
        pairs = [p for p in load_pairs(path) if (p.premise, p.hypothesis) not in skip]
        return first_per_label(pairs, per_label)

    def few_shot_example(self, record: dict[str, Any], sentences: int = 3) -> dict[str, str]:
        """A stance example from a corrected record: the premise's sentences most similar to the claim (in their
        order, as the LLM judge shows a passage) with the reviewer's label as the two answers."""
        from lyra.core.text import split_sentences

        claim = str(record["hypothesis"])
        parts = split_sentences(str(record["premise"])) or [str(record["premise"])]
        if len(parts) > sentences:
            vectors = self.index.embedder().embed([claim, *parts])
            keep = sorted(np.argsort(-(vectors[1:] @ vectors[0]))[:sentences].tolist())
            parts = [parts[i] for i in keep]
        support, contradict = LABEL_ANSWERS[str(record["correct_label"])]
        return {
            "passage": " ".join(parts),
            "claim": claim,
            "support": support,
            "contradict": contradict,
            "three_way": str(record["correct_label"]),
        }

    def measure_rules(self, proposed: LearnedRules, corrected: Sequence[LabelledPair]) -> dict[str, Any]:
        """Judge the corrected pairs and the regression set with the rules in force, then with the ``proposed`` rule
        set of its component (the active one plus the proposal: guidelines or few-shot examples for the stance LLM's
        prompts, labelled examples in the trained judge's combiner fit); their metrics and deltas, and each pair's
        label before and after."""
        if self._judge_factory is None:
            return {"measured": False, "why": "no judge to measure with"}
        in_force = {c: self.rulebook.rules(c) for c in (STANCE_LLM, STANCE_TRAINED)}
        current = in_force[proposed.component]
        proposed = replace(proposed, version=current.version + 1)
        regression = self.regression_pairs(exclude=corrected)
        with self._measure_lock:
            if self._measure_judge is None:
                self._measure_judge = self._judge_factory(
                    lambda: self._measure_rules[STANCE_LLM], lambda: self._measure_rules[STANCE_TRAINED]
                )
            judge = self._measure_judge
            out: dict[str, Any] = {"measured": True, "component": proposed.component}
            started = time.perf_counter()
            for name, pairs in (("corrected", list(corrected)), ("regression", regression)):
                texts = [(p.premise, p.hypothesis) for p in pairs]
                self._measure_rules = dict(in_force)
                before_id = judge.model_id
                before = judge.judge(texts) if texts else []
                self._measure_rules = {**in_force, proposed.component: proposed}
                after = judge.judge(texts) if texts else []
                m_before = _metrics(pairs, before, before_id)
                m_after = _metrics(pairs, after, judge.model_id)
                out[name] = {
                    "before": m_before,
                    "after": m_after,
                    "delta": _deltas(m_before, m_after),
                    "pairs": [
                        {
                            "id": p.id,
                            "gold": p.label,
                            "before": b.label,
                            "after": a.label,
                            "after_confidence": round(a.confidence, 4),
                        }
                        for p, b, a in zip(pairs, before, after, strict=True)
                    ],
                }
            if proposed.component == STANCE_TRAINED and proposed.examples and corrected:
                out["corrected_held_out"] = self._held_out(judge, in_force, proposed, list(corrected))
            self._measure_rules = dict(in_force)
        out["judge"] = before_id.split("+rules:")[0]
        out["rules_version_before"] = current.version
        per_label = self.settings.learning_regression_per_label
        out["regression_set"] = f"{self.settings.learning_regression_set.name}: first {per_label} per label"
        out["seconds"] = round(time.perf_counter() - started, 1)
        return out

    def _held_out(
        self, judge: NLIJudge, in_force: dict[str, LearnedRules], proposed: LearnedRules, pairs: list[LabelledPair]
    ) -> dict[str, Any]:
        """What the examples teach beyond the pairs they are: each corrected pair judged with all the proposed
        examples but its own (leave one out; the refitted combiner and the example memory without it). Called under
        the measuring lock."""
        results = []
        for pair in pairs:
            others = tuple(
                ex for ex in proposed.examples if (ex["premise"], ex["hypothesis"]) != (pair.premise, pair.hypothesis)
            )
            self._measure_rules = {**in_force, STANCE_TRAINED: replace(proposed, examples=others)}
            results.extend(judge.judge([(pair.premise, pair.hypothesis)]))
        metrics = _metrics(pairs, results, "leave-one-out")
        return {
            "after": metrics,
            "pairs": [{"id": p.id, "gold": p.label, "after": r.label} for p, r in zip(pairs, results, strict=True)],
            "note": "each pair judged with the other examples only: what a new pair of the pattern would get",
        }

    # ---------------------------------------------------------------- reading proposals
    def _proposals(self, ids: Sequence[str]) -> list[Proposal]:
        rows = self.store.run("learning/get_proposals", {"ids": list(ids)})
        out: list[Proposal] = []
        for row in rows:
            p = to_plain(row["proposal"])
            out.append(
                Proposal(
                    id=p["id"],
                    status=p["status"],
                    rule_type=p["rule_type"],
                    component=p["component"],
                    key=p["key"],
                    content=p["content"],
                    insertion_point=p["insertion_point"],
                    evidence_ids=sorted(row["evidence_ids"]),
                    evidence_summary=p["evidence_summary"],
                    classification_confidence=p["classification_confidence"],
                    predicted_effect=json.loads(p["predicted_effect"]),
                    conflicts=[Conflict.model_validate(c) for c in json.loads(p.get("conflicts") or "[]")],
                    reviews=[Review.model_validate(to_plain(v)) for v in row["reviews"] if v],
                    rule_id=p.get("rule_id"),
                    created_at=p["created_at"],
                )
            )
        order = {pid: i for i, pid in enumerate(ids)}
        return sorted(out, key=lambda p: order.get(p.id, 0))

    def get_proposal(self, request: GetProposalRequest) -> Proposal:
        found = self._proposals([request.id])
        if not found:
            raise NotFoundError(f"no proposal {request.id!r}", hint="list_proposals lists them")
        return found[0]

    def list_proposals(self, request: ListProposalsRequest) -> ProposalList:
        ids = [
            r["id"]
            for r in self.store.run(
                "learning/list_proposals",
                {"status": request.status, "component": request.component, "limit": request.limit},
            )
        ]
        return ProposalList(proposals=self._proposals(ids))

    # ================================================================ meta-review
    def approve_proposal(self, request: ApproveProposalRequest) -> Proposal:
        """One reviewer's approval; the proposal takes effect when ``learning_approvals_required`` distinct reviewers
        approved it, or at once with an ``override_reason`` (logged)."""
        reviewer = request.reviewer_id or ANONYMOUS
        proposal = self.get_proposal(GetProposalRequest(id=request.id))
        active = 0
        if proposal.component in RULE_COMPONENTS:
            active = len([r for r in self._rules(proposal.component) if r["status"] == "active"])
        check_approval(
            ApprovalFacts(
                id=proposal.id,
                status=proposal.status,
                rule_type=proposal.rule_type,
                approvers=frozenset(r.reviewer_id for r in proposal.reviews if r.decision == "approve"),
                conflicts=tuple(f"{c.rule_id}: {c.reason}" for c in proposal.conflicts),
                # only the stance judges have a labelled set to measure on; elsewhere two approvals suffice
                measured=bool(proposal.predicted_effect.get("measured"))
                or proposal.component not in (STANCE_LLM, STANCE_TRAINED),
                active_rules=active,
                max_rules=self.settings.learning_max_rules_per_component,
                regression_delta=_regression_delta(proposal.predicted_effect),
                regression_tolerance=self.settings.learning_regression_tolerance,
            ),
            reviewer,
            request.override_reason,
        )
        required = self.settings.learning_approvals_required

        def write(tx: Transaction) -> bool:
            rows = tx.run(
                "learning/create_proposal_review",
                {
                    "id": proposal.id,
                    "review_id": new_id("prv"),
                    "decision": "approve",
                    "reviewer_id": reviewer,
                    "reason": request.override_reason,
                    "override": request.override_reason is not None,
                },
            )
            if not rows:
                raise ConflictError(f"proposal {proposal.id} was decided meanwhile")
            if not takes_effect(len(rows[0]["approvers"]), required, request.override_reason):
                return False
            self._activate(tx, proposal, reviewer)
            return True

        activated = self.store.write_transaction("learning approve_proposal", write)
        if activated:
            self.rulebook.invalidate()
            self._deploy_side_effects(proposal)
        return self.get_proposal(GetProposalRequest(id=proposal.id))

    def _activate(self, tx: Transaction, proposal: Proposal, reviewer: str) -> None:
        rule_id = new_id("lrl")
        if not tx.run("learning/set_proposal_status", {"id": proposal.id, "status": "approved", "rule_id": rule_id}):
            raise ConflictError(f"proposal {proposal.id} was decided meanwhile")
        tx.run(
            "learning/create_rule",
            {
                "proposal_id": proposal.id,
                "row": {
                    "id": rule_id,
                    "component": proposal.component,
                    "rule_type": proposal.rule_type,
                    "key": proposal.key,
                    "content": proposal.content,
                    "proposal_id": proposal.id,
                    "status": "active",
                    "predicted_effect": json.dumps(proposal.predicted_effect),
                },
            },
        )
        current = tx.run("learning/rule_set", {"component": proposal.component, "version": None})
        ids = list(to_plain(current[0]["rule_set"])["rule_ids"]) if current else []
        tx.run(
            "learning/create_rule_set",
            {
                "component": proposal.component,
                "rule_ids": [*ids, rule_id],
                "cause": f"approve {proposal.id}",
                "reviewer_id": reviewer,
                "reason": None,
            },
        )

    def _deploy_side_effects(self, proposal: Proposal) -> None:
        if proposal.rule_type == "CALIBRATION_REFIT":
            from lyra.models.trust import CalibrationRollbackRequest

            version = int(json.loads(proposal.content)["calibrator_version"])
            self.calibration.rollback(CalibrationRollbackRequest(version=version))
        if proposal.component == STANCE_TRAINED:
            self.write_training_data()

    def training_data_path(self, version: int) -> Path:
        return self.settings.state_dir / "learning" / STANCE_TRAINED / f"data_v{version}.jsonl"

    def write_training_data(self) -> Path | None:
        """The trained judge's extra labelled pairs at the current rule-set version (Lyra's JSONL schema: id,
        premise, hypothesis, label); `lyra train stance --calibration-extra FILE` reads it."""
        rows = self.store.run("learning/rule_set", {"component": STANCE_TRAINED, "version": None})
        if not rows:
            return None
        rule_set = to_plain(rows[0]["rule_set"])
        by_id = {r["id"]: r for r in self._rules(STANCE_TRAINED)}
        lines: list[str] = []
        for rule_id in rule_set["rule_ids"]:
            rule = by_id.get(rule_id)
            if rule is not None:
                lines.extend(json.dumps(pair, ensure_ascii=False) for pair in json.loads(rule["content"]))
        path = self.training_data_path(int(rule_set["version"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        return path

    def reject_proposal(self, request: RejectProposalRequest) -> Proposal:
        reviewer = request.reviewer_id or ANONYMOUS

        def write(tx: Transaction) -> None:
            rows = tx.run(
                "learning/create_proposal_review",
                {
                    "id": request.id,
                    "review_id": new_id("prv"),
                    "decision": "reject",
                    "reviewer_id": reviewer,
                    "reason": request.reason,
                    "override": False,
                },
            )
            if not rows:
                raise ConflictError(f"proposal {request.id} is not pending")
            tx.run("learning/set_proposal_status", {"id": request.id, "status": "rejected", "rule_id": None})

        self.get_proposal(GetProposalRequest(id=request.id))  # NotFoundError first
        self.store.write_transaction("learning reject_proposal", write)
        return self.get_proposal(GetProposalRequest(id=request.id))

    # ================================================================ rules
    def _rules(self, component: str | None) -> list[dict[str, Any]]:
        return [to_plain(r["rule"]) for r in self.store.run("learning/rules", {"component": component})]

    def rule_sets(self) -> list[RuleSet]:
        return [RuleSet.model_validate(to_plain(r["rule_set"])) for r in self.store.run("learning/latest_rule_sets")]

    def list_rules(self, request: ListRulesRequest) -> RuleList:
        rules = [
            Rule(
                id=r["id"],
                component=r["component"],
                rule_type=r["rule_type"],
                key=r["key"],
                content=r["content"],
                proposal_id=r["proposal_id"],
                status=r["status"],
                activated_at=r["activated_at"],
                predicted_effect=json.loads(r.get("predicted_effect") or "{}"),
                observed=self._observed(r),
            )
            for r in self._rules(request.component)
            if request.include_retired or r["status"] == "active"
        ]
        sets = [s for s in self.rule_sets() if request.component is None or s.component == request.component]
        return RuleList(rules=rules, rule_sets=sets)

    def report_rows(self) -> list[dict[str, Any]]:
        """The active rules as the report page lists them: predicted and observed effect in words."""
        rows: list[dict[str, Any]] = []
        for rule in self.list_rules(ListRulesRequest()).rules:
            predicted = predicted_text(rule.predicted_effect)
            observed = rule.observed
            seen = f"{observed['kept']} kept, {observed['corrected']} corrected" if observed else "-"
            if observed.get("flag"):
                seen += " (flagged for sunset)"
            rows.append(
                {
                    "id": rule.id,
                    "component": rule.component,
                    "rule_type": rule.rule_type,
                    "content": rule.content,
                    "predicted": predicted,
                    "observed": seen,
                }
            )
        return rows

    def _observed(self, rule: dict[str, Any]) -> dict[str, Any]:
        """Reviews of stance verdicts (or of extracted claims) made while the rule was in force: how many kept the
        label, how many corrected it (effectiveness tracking; a rule whose outputs are corrected more often than
        kept is flagged)."""
        records = {STANCE_LLM: "stance", CLAIM_EXTRACTION: EXTRACTION_RECORDS}.get(rule["component"])
        if records is None:
            return {}
        params = {"component": rule["component"], "rule_id": rule["id"], "records": records}
        rows = self.store.run("learning/rule_observations", params)
        kept, corrected = int(rows[0]["kept"]), int(rows[0]["corrected"])
        out: dict[str, Any] = {"reviews": kept + corrected, "kept": kept, "corrected": corrected}
        if kept + corrected >= self.settings.learning_min_evidence and corrected > kept:
            out["flag"] = "sunset: reviewers corrected more verdicts made under this rule than they kept"
        return out

    def _new_rule_set(self, component: str, rule_ids: list[str], cause: str, reviewer: str, reason: str) -> int:
        def write(tx: Transaction) -> int:
            version = int(
                tx.run(
                    "learning/create_rule_set",
                    {
                        "component": component,
                        "rule_ids": rule_ids,
                        "cause": cause,
                        "reviewer_id": reviewer,
                        "reason": reason,
                    },
                )[0]["version"]
            )
            tx.run(
                "learning/set_rule_statuses",
                {
                    "component": component,
                    "active_ids": rule_ids,
                    "reason": reason,
                    "reviewer_id": reviewer,
                    "cause": cause,
                },
            )
            return version

        version = self.store.write_transaction(f"learning {cause}", write)
        self.rulebook.invalidate()
        if component == STANCE_TRAINED:
            self.write_training_data()
        return version

    def retire_rule(self, request: RetireRuleRequest) -> RuleList:
        """Take an active rule out of its component's rule set (a new version without it)."""
        reviewer = request.reviewer_id or ANONYMOUS
        rule = next((r for r in self._rules(None) if r["id"] == request.id), None)
        if rule is None:
            raise NotFoundError(f"no learned rule {request.id!r}", hint="list_rules lists them")
        if rule["status"] != "active":
            raise ConflictError(f"rule {request.id} is already {rule['status']}")
        if rule["component"] == "calibration":
            raise ConflictError(
                f"rule {request.id} activated a calibrator; calibrators are switched by calibration_rollback",
                hint="calibration_rollback(version) makes another calibrator (or none, 0) active",
            )
        current = self.store.run("learning/rule_set", {"component": rule["component"], "version": None})
        ids = [i for i in to_plain(current[0]["rule_set"])["rule_ids"] if i != request.id] if current else []
        self._new_rule_set(rule["component"], ids, f"retire {request.id}", reviewer, request.reason)
        return self.list_rules(ListRulesRequest(component=rule["component"], include_retired=True))

    def rollback_rules(self, request: RollbackRulesRequest) -> RuleList:
        """Restore the rule set of an earlier version (0: no rules) as a new version."""
        reviewer = request.reviewer_id or ANONYMOUS
        ids: list[str] = []
        if request.version:
            rows = self.store.run("learning/rule_set", {"component": request.component, "version": request.version})
            if not rows:
                raise NotFoundError(f"{request.component} has no rule-set version {request.version}")
            ids = list(to_plain(rows[0]["rule_set"])["rule_ids"])
        self._new_rule_set(request.component, ids, f"rollback to v{request.version}", reviewer, request.reason)
        return self.list_rules(ListRulesRequest(component=request.component, include_retired=True))


__all__ = ["FeedbackIndex", "LearningService", "RuleBook", "context_text"]
