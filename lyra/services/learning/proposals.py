"""Proposals: rules proposed from repeated corrections, in batches, and the proposals read back.

A batch (:meth:`Proposer.generate_proposals`; also after ``LYRA_LEARNING_AUTO_PROPOSE_AFTER`` new corrections)
groups the stance corrections by error pattern and, per pattern with enough evidence, proposes a ``GUIDELINE`` for
the stance LLM's prompts, a few-shot ``NEGATIVE_EXAMPLE`` for them, and a ``NEGATIVE_EXAMPLE`` set for the trained
judge (its example memory and combiner fit); from rejected claims the LLM extracted, a ``NEGATIVE_EXAMPLE`` for
claim extraction; for a domain whose verdicts reviewers keep correcting, a ``CONSTRAINT`` lowering its ranking
weight; a ``CALIBRATION_REFIT`` when the reviewed samples give a calibrator that lowers the held-out ECE. Reviewers
may also write a guideline for a prompt's component (:meth:`Proposer.propose_rule`). Each proposal's predicted
effect is measured (:mod:`~lyra.services.learning.effects`); proposals of a pattern that already has a pending one
join it as more evidence; one that contradicts an active rule is flagged with that rule.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from lyra.core.errors import ConflictError, InvalidInputError, NotFoundError
from lyra.core.ids import new_id
from lyra.core.settings import LearningSettings
from lyra.graph.store import GraphStore, to_plain
from lyra.ml.calibration import MIN_FIT_SAMPLES
from lyra.ml.evaluation import LabelledPair
from lyra.ml.learned_rules import (
    CITATION_DETECTION,
    CITATION_USEFULNESS,
    CLAIM_EXTRACTION,
    EVIDENCE_RANKING,
    STANCE_LLM,
    STANCE_TRAINED,
    LearnedRules,
)
from lyra.ml.protocols import Embedder
from lyra.models.learning import (
    ANONYMOUS,
    Conflict,
    GenerateProposalsRequest,
    GenerateProposalsResponse,
    GetProposalRequest,
    ListProposalsRequest,
    Proposal,
    ProposalList,
    ProposeRuleRequest,
    Review,
)
from lyra.services.calibration import CalibrationService
from lyra.services.learning.classify import Classifier, record_facts
from lyra.services.learning.effects import EffectMeasurer
from lyra.services.learning.records import FeedbackRecords
from lyra.services.learning.rulebook import Rules
from lyra.services.learning_rules import (
    EXTRACTION_PATTERN,
    EXTRACTION_RECORDS,
    STANCE_GUIDELINES,
    ActiveRuleFacts,
    Evaluation,
    conflicts,
)

log = logging.getLogger(__name__)

DOMAIN_PENALTY = 0.5  # the ranking factor a CONSTRAINT proposes for a domain whose verdicts reviewers keep correcting
DOMAIN_CORRECTION_RATE = 0.5  # ... when at least this share of its reviewed verdicts were corrected
DOMAIN_MIN_TASKS = 2  # ... in at least this many tasks
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
LABEL_ANSWERS = {"entailment": ("yes", "no"), "contradiction": ("no", "yes"), "neutral": ("no", "no")}
Progress = Callable[[dict[str, Any]], None]  # a proposal batch's stage and counters (JobContext.report)


class Proposals:
    """Reads the stored proposals with their evidence ids and reviews."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store

    def by_ids(self, ids: Sequence[str]) -> list[Proposal]:
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
        found = self.by_ids([request.id])
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
        return ProposalList(proposals=self.by_ids(ids))


class Proposer:
    """Proposes rules: the batches and the reviewer-written guidelines, each stored as a pending proposal."""

    def __init__(
        self,
        store: GraphStore,
        settings: LearningSettings,
        calibration: CalibrationService,
        records: FeedbackRecords,
        classifier: Classifier,
        in_force: Callable[[str], LearnedRules],
        rules: Rules,
        effects: EffectMeasurer,
        proposals: Proposals,
        embedder: Callable[[], Embedder],
    ) -> None:
        """``in_force(component)``: the rules in force; ``embedder()``: picks a few-shot example's sentences."""
        self.store = store
        self.settings = settings
        self.calibration = calibration
        self.records = records
        self.classifier = classifier
        self.in_force = in_force
        self.rules = rules
        self.effects = effects
        self.proposals = proposals
        self.embedder = embedder
        self.batch_lock = threading.Lock()
        self._last_refit_samples: int | None = None  # a refit that did not help is not tried again on the same data

    def maybe_auto_propose(self) -> None:
        every = self.settings.learning_auto_propose_after
        if not every:
            return
        waiting = int(self.store.run("learning/records_since_last_batch")[0]["records"])
        if waiting < every or not self.batch_lock.acquire(blocking=False):
            return

        def run() -> None:
            try:
                self._generate(GenerateProposalsRequest())
            except Exception:  # a background batch must not take the feedback call down
                log.exception("automatic proposal batch failed")
            finally:
                self.batch_lock.release()

        threading.Thread(target=run, name="lyra-learning-batch", daemon=True).start()

    def generate_proposals(
        self, request: GenerateProposalsRequest, progress: Progress | None = None
    ) -> GenerateProposalsResponse:
        """One batch: group the stance corrections by error pattern and propose for each group with enough evidence
        (see the module's docstring). Records already evidence of a proposal are not used twice. Measuring runs the
        judge (minutes): the doors queue the batch as a job (``lyra.services.learning_jobs``), whose ``progress``
        receives the stage and counters after each step (it may raise to stop the batch)."""
        with self.batch_lock:
            return self._generate(request, progress)

    def _generate(
        self, request: GenerateProposalsRequest, progress: Progress | None = None
    ) -> GenerateProposalsResponse:
        tell: Progress = progress or (lambda _progress: None)
        tell({"stage": "reading corrections"})
        records = self.records.of_component("stance")
        used_by = self._used_record_ids()
        used = set().union(*used_by.values())
        facts = [record_facts(r) for r in records]
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
        active = self.rules.active_facts()
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
        elif len(group) < (needed := self.settings.learning_min_evidence):
            out.skipped.append(f"{component} {pattern}: {len(group)} new correction(s), {needed} needed")
        else:
            out.created.append(make())

    def _rejected_extractions(self, used: set[str]) -> list[dict[str, Any]]:
        """Rejections of extracted claims not used by a proposal yet, oldest first, leaving out claims a reviewer
        restored (reviewers disagree) and records without the passage the claim came from."""
        records = self.records.of_component(EXTRACTION_RECORDS)
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
        current = self.in_force(EVIDENCE_RANKING)
        proposed = replace(current, constraints=(*current.constraints, constraint))
        effect: dict[str, Any] = (
            self.effects.measure_ranking(proposed, corrected, kept) if measure else {"measured": False}
        )
        effect["correction_rate"] = round(rate, 4)
        return self._store_proposal(
            EVIDENCE_RANKING, "CONSTRAINT", key, f"domain {domain}", json.dumps(constraint), EVIDENCE_RANKING,
            effect, corrected, active,
        )  # fmt: skip

    def _used_record_ids(self) -> dict[str, set[str]]:
        """Per component, the feedback records its proposals (of any status) already rest on."""
        ids = [
            r["id"]
            for r in self.store.run("learning/list_proposals", {"status": None, "component": None, "limit": 10_000})
        ]
        used: dict[str, set[str]] = {}
        for proposal in self.proposals.by_ids(ids):
            used.setdefault(proposal.component, set()).update(proposal.evidence_ids)
        return used

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
        current = self.in_force(STANCE_LLM)
        if rule_type == "GUIDELINE":
            content = STANCE_GUIDELINES[pattern]
            proposed = replace(current, guidelines=(*current.guidelines, content))
            effect = self.effects.measure_rules(proposed, pairs) if measure else {"measured": False}
        elif component == STANCE_LLM:  # a few-shot example made from the group's most confident mistake
            example = self.few_shot_example(max(group, key=lambda r: r.get("predicted_confidence") or 0.0))
            content = json.dumps(example, ensure_ascii=False)
            proposed = replace(current, examples=(*current.examples, example))
            effect = self.effects.measure_rules(proposed, pairs) if measure else {"measured": False}
        else:  # labelled pairs for the trained judge: they join its combiner's fit while the rule is active
            rows = [{"id": p.id, "premise": p.premise, "hypothesis": p.hypothesis, "label": p.label} for p in pairs]
            content = json.dumps(rows, ensure_ascii=False)
            trained = self.in_force(STANCE_TRAINED)
            examples = tuple({k: str(v) for k, v in row.items()} for row in rows)
            proposed = replace(trained, examples=(*trained.examples, *examples))
            effect = self.effects.measure_rules(proposed, pairs) if measure else {"measured": False}
        insertion = "stance_llm_example" if component == STANCE_LLM and rule_type != "GUIDELINE" else component
        return self._store_proposal(component, rule_type, key, pattern, content, insertion, effect, group, active)

    def _propose_extraction(
        self, key: str, group: list[dict[str, Any]], active: list[ActiveRuleFacts], measure: bool
    ) -> Proposal:
        """A NEGATIVE_EXAMPLE for claim extraction: the most recent rejected claims (with the reviewers' reasons),
        which the extractor drops when the LLM returns them again; measured by extracting again from their passages."""
        shown = [{"claim": str(r["hypothesis"]), "reason": str(r.get("comment") or "")} for r in group]
        shown = list({ex["claim"]: ex for ex in shown}.values())[-MAX_REJECTED_SHOWN:]
        current = self.in_force(CLAIM_EXTRACTION)
        proposed = replace(current, examples=(*current.examples, *shown))
        effect = self.effects.measure_extraction(proposed, group) if measure else {"measured": False}
        content = json.dumps(shown, ensure_ascii=False)
        return self._store_proposal(
            CLAIM_EXTRACTION, "NEGATIVE_EXAMPLE", key, EXTRACTION_PATTERN, content, "claim_extraction_example",
            effect, group, active,
        )  # fmt: skip

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
        evaluation: Evaluation = self.classifier.classify_group(group)
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
        return self.proposals.get_proposal(GetProposalRequest(id=str(row["id"])))

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
            for p in self.proposals.list_proposals(ListProposalsRequest(component="calibration", limit=1)).proposals
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
        return self.proposals.get_proposal(GetProposalRequest(id=str(row["id"])))

    def propose_rule(self, request: ProposeRuleRequest) -> Proposal:
        """A guideline written by a reviewer, for any component; the same meta-review as generated proposals.
        A stance-LLM guideline is measured on the regression set (and the evidence records' pairs)."""
        reviewer = request.reviewer_id or ANONYMOUS
        evidence = self.records.by_ids(request.evidence_ids) if request.evidence_ids else []
        missing = sorted(set(request.evidence_ids) - {r["id"] for r in evidence})
        if missing:
            raise NotFoundError(f"no feedback record {missing[0]!r}", hint="get_feedback_for_component lists them")
        if request.component == EVIDENCE_RANKING:
            raise InvalidInputError(
                "component",
                "evidence_ranking takes CONSTRAINT rules, which are proposed from corrected verdicts of a domain's "
                "passages (generate_proposals), not written guidelines",
            )
        active = self.rules.active_facts()
        if any(r.component == request.component and r.content == request.content for r in active):
            raise ConflictError(f"an active {request.component} rule already says exactly this")
        effect: dict[str, Any] = {"measured": False, "why": "no labelled set to measure this component on"}
        if request.component == STANCE_LLM:
            pairs = [
                LabelledPair(id=r["id"], premise=r["premise"], hypothesis=r["hypothesis"], label=r["correct_label"])
                for r in evidence
                if r.get("premise") and r.get("hypothesis") and r.get("correct_label")
            ]
            current = self.in_force(STANCE_LLM)
            proposed = replace(current, guidelines=(*current.guidelines, request.content))
            effect = self.effects.measure_rules(proposed, pairs) if request.measure else {"measured": False}
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
        return self.proposals.get_proposal(GetProposalRequest(id=str(row["id"])))

    def few_shot_example(self, record: dict[str, Any], sentences: int = 3) -> dict[str, str]:
        """A stance example from a corrected record: the premise's sentences most similar to the claim (in their
        order, as the LLM judge shows a passage) with the reviewer's label as the two answers."""
        from lyra.core.text import split_sentences

        claim = str(record["hypothesis"])
        parts = split_sentences(str(record["premise"])) or [str(record["premise"])]
        if len(parts) > sentences:
            vectors = self.embedder().embed([claim, *parts])
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
