"""Lyra learns from its reviewers (decision record 0013; the loop: capture -> store -> evaluate -> propose ->
meta-review -> deploy).

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

One module per stage, behind the thin façade :class:`LearningService`: :mod:`~lyra.services.learning.records` (the
records and their FAISS index), :mod:`~lyra.services.learning.capture`, :mod:`~lyra.services.learning.classify`,
:mod:`~lyra.services.learning.proposals`, :mod:`~lyra.services.learning.effects` (measuring predicted effects),
:mod:`~lyra.services.learning.review` (meta-review and deployment) and :mod:`~lyra.services.learning.rulebook` (the
rules in force and their history).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lyra.core.settings import LearningSettings
from lyra.graph.store import GraphStore
from lyra.ml.claims import ClaimExtractor
from lyra.ml.evaluation import LabelledPair
from lyra.ml.learned_rules import LearnedRules, RuleSource
from lyra.ml.protocols import Embedder, NLIJudge
from lyra.models.learning import (
    ApproveProposalRequest,
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
    RollbackRulesRequest,
    RuleList,
    RuleSet,
    SimilarRecords,
)
from lyra.models.trust import FeedbackRequest, FeedbackResponse
from lyra.services.calibration import CalibrationService
from lyra.services.learning.capture import Capture
from lyra.services.learning.classify import Classifier
from lyra.services.learning.effects import EffectMeasurer
from lyra.services.learning.effects import _rank_summary as _rank_summary
from lyra.services.learning.effects import predicted_text as predicted_text
from lyra.services.learning.proposals import Progress, Proposals, Proposer
from lyra.services.learning.records import FeedbackIndex, FeedbackRecords, context_text
from lyra.services.learning.review import ProposalReview
from lyra.services.learning.rulebook import RuleBook, Rules


class LearningService:
    """The learning loop's façade: the doors' operations, each handed to the stage that does it."""

    def __init__(
        self,
        store: GraphStore,
        settings: LearningSettings,
        state_dir: Path,
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
        proposals' predicted effects (None: those are not measured). ``state_dir``: where the feedback index and
        the learned examples' data are kept."""
        self.store = store
        self.settings = settings
        self.calibration = calibration
        self.rulebook = RuleBook(store, settings.learning_rules_refresh_seconds)
        self.index = FeedbackIndex(store, state_dir / "faiss" / "feedback", embedder)
        self._records = FeedbackRecords(store, self.index)
        classifier = Classifier(
            self._records,
            self.index,
            settings.learning_similarity_threshold,
            settings.learning_high_min,
        )
        self._rules = Rules(store, settings, state_dir, self.rulebook)
        self._proposals = Proposals(store)
        self._effects = EffectMeasurer(
            store, settings, self.rulebook.rules, self.index.embedder, judge_factory, extractor_factory, rank_task
        )
        self._proposer = Proposer(
            store, settings, calibration, self._records, classifier, self.rulebook.rules, self._rules, self._effects,
            self._proposals, self.index.embedder,
        )  # fmt: skip
        self._batch_lock = self._proposer.batch_lock  # held while a proposal batch runs
        self._capture = Capture(store, self._records, self.index, classifier, self._proposer.maybe_auto_propose)
        self._review = ProposalReview(store, settings, calibration, self.rulebook, self._rules, self._proposals)

    # ================================================================ capture and store
    def edge_snapshot(self, task_id: str, edge_id: object) -> dict[str, Any] | None:
        """The edge as the judge left it, read before a reviewer's ``edge_correct`` changes it."""
        return self._capture.edge_snapshot(task_id, edge_id)

    def capture(
        self, request: FeedbackRequest, response: FeedbackResponse, snapshot: dict[str, Any] | None
    ) -> FeedbackRecord:
        """The feedback record of an applied feedback action, classified and indexed."""
        return self._capture.capture(request, response, snapshot)

    def get_feedback(self, request: GetFeedbackRequest) -> FeedbackRecord:
        return self._records.get(request)

    def feedback_for_component(self, request: FeedbackForComponentRequest) -> FeedbackRecordList:
        return self._records.for_component(request)

    def find_similar(self, request: FindSimilarRequest) -> SimilarRecords:
        """Records whose context is at least ``threshold`` similar (cosine) to the record's, most similar first."""
        return self._records.find_similar(request)

    # ================================================================ proposals
    def generate_proposals(
        self, request: GenerateProposalsRequest, progress: Progress | None = None
    ) -> GenerateProposalsResponse:
        """One batch: group the stance corrections by error pattern and propose for each group with enough evidence
        (see the module's docstring). Records already evidence of a proposal are not used twice. Measuring runs the
        judge (minutes): the doors queue the batch as a job (``lyra.services.learning_jobs``), whose ``progress``
        receives the stage and counters after each step (it may raise to stop the batch)."""
        return self._proposer.generate_proposals(request, progress)

    def propose_rule(self, request: ProposeRuleRequest) -> Proposal:
        """A guideline written by a reviewer, for any component; the same meta-review as generated proposals."""
        return self._proposer.propose_rule(request)

    def few_shot_example(self, record: dict[str, Any], sentences: int = 3) -> dict[str, str]:
        """A stance example from a corrected record (see :meth:`Proposer.few_shot_example`)."""
        return self._proposer.few_shot_example(record, sentences)

    def get_proposal(self, request: GetProposalRequest) -> Proposal:
        return self._proposals.get_proposal(request)

    def list_proposals(self, request: ListProposalsRequest) -> ProposalList:
        return self._proposals.list_proposals(request)

    # ================================================================ predicted effect
    def measure_ranking(
        self, proposed: LearnedRules, corrected: Sequence[dict[str, Any]], kept: Sequence[dict[str, Any]]
    ) -> dict[str, Any]:
        """A ranking rule's effect on where reviewed passages rank (see :meth:`EffectMeasurer.measure_ranking`)."""
        return self._effects.measure_ranking(proposed, corrected, kept)

    def measure_extraction(self, proposed: LearnedRules, rejected: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """A claim-extraction rule's effect (see :meth:`EffectMeasurer.measure_extraction`)."""
        return self._effects.measure_extraction(proposed, rejected)

    def regression_pairs(self, exclude: Sequence[LabelledPair] = ()) -> list[LabelledPair]:
        """The first ``learning_regression_per_label`` pairs per label of the regression set (none of ``exclude``)."""
        return self._effects.regression_pairs(exclude)

    def measure_rules(self, proposed: LearnedRules, corrected: Sequence[LabelledPair]) -> dict[str, Any]:
        """A stance rule set's effect on the corrected pairs and the regression set (see
        :meth:`EffectMeasurer.measure_rules`)."""
        return self._effects.measure_rules(proposed, corrected)

    # ================================================================ meta-review
    def approve_proposal(self, request: ApproveProposalRequest) -> Proposal:
        """One reviewer's approval; the proposal takes effect when ``learning_approvals_required`` distinct reviewers
        approved it, or at once with an ``override_reason`` (logged)."""
        return self._review.approve_proposal(request)

    def reject_proposal(self, request: RejectProposalRequest) -> Proposal:
        return self._review.reject_proposal(request)

    # ================================================================ rules
    def training_data_path(self, version: int) -> Path:
        return self._rules.training_data_path(version)

    def write_training_data(self) -> Path | None:
        """The trained judge's extra labelled pairs at the current rule-set version (see
        :meth:`Rules.write_training_data`)."""
        return self._rules.write_training_data()

    def rule_sets(self) -> list[RuleSet]:
        return self._rules.rule_sets()

    def list_rules(self, request: ListRulesRequest) -> RuleList:
        return self._rules.list_rules(request)

    def report_rows(self) -> list[dict[str, Any]]:
        """The active rules as the report page lists them: predicted and observed effect in words."""
        return self._rules.report_rows()

    def retire_rule(self, request: RetireRuleRequest) -> RuleList:
        """Take an active rule out of its component's rule set (a new version without it)."""
        return self._rules.retire_rule(request)

    def rollback_rules(self, request: RollbackRulesRequest) -> RuleList:
        """Restore the rule set of an earlier version (0: no rules) as a new version."""
        return self._rules.rollback_rules(request)


__all__ = ["FeedbackIndex", "LearningService", "RuleBook", "context_text", "predicted_text"]
