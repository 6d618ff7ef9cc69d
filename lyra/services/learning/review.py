"""Review (meta-review and deployment): ``approve_proposal`` needs ``LYRA_LEARNING_APPROVALS_REQUIRED`` distinct
reviewers, or one with an ``override_reason`` (logged), and passes the deterministic approval checks of
:mod:`lyra.services.learning_rules` (conflicts, measured effect, regression, rules per component);
``reject_proposal`` needs a reason. Every review is a node of its own. An approved proposal becomes an active rule
in a new rule-set version of its component (:mod:`~lyra.services.learning.rulebook`); a calibration refit
activates its calibrator, a trained-judge rule rewrites the judge's extra training data."""

from __future__ import annotations

import json

from lyra.core.errors import ConflictError
from lyra.core.ids import new_id
from lyra.core.settings import LearningSettings
from lyra.graph.store import GraphStore, Transaction, to_plain
from lyra.ml.learned_rules import (
    CITATION_DETECTION,
    CITATION_USEFULNESS,
    CLAIM_EXTRACTION,
    EVIDENCE_RANKING,
    STANCE_LLM,
    STANCE_TRAINED,
)
from lyra.models.learning import ANONYMOUS, ApproveProposalRequest, GetProposalRequest, Proposal, RejectProposalRequest
from lyra.services.calibration import CalibrationService
from lyra.services.learning.effects import regression_delta
from lyra.services.learning.proposals import Proposals
from lyra.services.learning.rulebook import RuleBook, Rules
from lyra.services.learning_rules import ApprovalFacts, check_approval, takes_effect

RULE_COMPONENTS = (
    STANCE_LLM, STANCE_TRAINED, CLAIM_EXTRACTION, CITATION_USEFULNESS, CITATION_DETECTION, EVIDENCE_RANKING,
)  # fmt: skip


class ProposalReview:
    """Approves and rejects proposals; an approval that takes effect deploys the rule."""

    def __init__(
        self,
        store: GraphStore,
        settings: LearningSettings,
        calibration: CalibrationService,
        rulebook: RuleBook,
        rules: Rules,
        proposals: Proposals,
    ) -> None:
        self.store = store
        self.settings = settings
        self.calibration = calibration
        self.rulebook = rulebook
        self.rules = rules
        self.proposals = proposals

    def approve_proposal(self, request: ApproveProposalRequest) -> Proposal:
        """One reviewer's approval; the proposal takes effect when ``learning_approvals_required`` distinct reviewers
        approved it, or at once with an ``override_reason`` (logged)."""
        reviewer = request.reviewer_id or ANONYMOUS
        proposal = self.proposals.get_proposal(GetProposalRequest(id=request.id))
        active = 0
        if proposal.component in RULE_COMPONENTS:
            active = len([r for r in self.rules.stored(proposal.component) if r["status"] == "active"])
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
                regression_delta=regression_delta(proposal.predicted_effect),
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
        return self.proposals.get_proposal(GetProposalRequest(id=proposal.id))

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
            self.rules.write_training_data()

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

        self.proposals.get_proposal(GetProposalRequest(id=request.id))  # NotFoundError first
        self.store.write_transaction("learning reject_proposal", write)
        return self.proposals.get_proposal(GetProposalRequest(id=request.id))
