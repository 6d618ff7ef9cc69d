"""Rule deployments as recorded runs, against the real Neo4j: approving a learned rule into force and rolling the
rule set back are each a 'rule' run of every task with stance evidence (not of a task without any), and get_changes
attributes a claim that stood differently at that run to the rule change, naming what was deployed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from lyra.bootstrap import Services, build_services
from lyra.core.settings import Settings
from lyra.models.api import RescoreRequest
from lyra.models.learning import ApproveProposalRequest, ProposeRuleRequest, RollbackRulesRequest
from lyra.models.timeline import GetChangesRequest, GetClaimTimelineRequest
from tests.support.helpers import seed_fragments, seed_task

pytestmark = pytest.mark.neo4j


def test_a_rule_deployment_is_a_run_of_each_task_it_bears_on(
    graph: Services, settings: Settings, tmp_path: Path
) -> None:
    services = build_services(settings.model_copy(update={"state_dir": tmp_path / "state"}), apply_schema=False)
    try:
        ops = services.operations
        judged, other = seed_task(services, "rules_judged", ["the drug lowers pressure", "the drug is safe"])
        seed_task(services, "rules_bare", ["a claim nobody judged yet"])
        fragments = seed_fragments(services, 2, "rules")
        services.evidence.create_stance_edges(
            [
                {"fragment_id": fragments[0], "claim_id": judged, "relation": "SUPPORTS", "nli_confidence": 0.55},
                {"fragment_id": fragments[1], "claim_id": other, "relation": "REFUTES", "nli_confidence": 0.7},
            ]
        )
        services.timeline.record_run("rules_judged", "ingest")
        services.timeline.record_run("rules_bare", "ingest")
        since = datetime.now(UTC)

        # an edge judged again under the new rule set (a stand-in for the re-judgment; no run recorded for it yet)
        services.store.driver.execute_query(
            "MATCH (:Claim {id: $c})<-[r:SUPPORTS]-() SET r.nli_confidence = 0.95, r.nli_rules_version = 1", c=judged
        )
        ops.rescore_claims(RescoreRequest(task_id="rules_judged"))  # the claim's stored sums follow the edge
        proposal = ops.propose_rule(
            ProposeRuleRequest(
                component="stance_llm",
                content="Answer yes to TRUE only when the passage reports the claimed effect itself.",
                reason="over-called supports",
                reviewer_id="ana",
                measure=False,
            )
        )
        approved = ops.approve_proposal(
            ApproveProposalRequest(id=proposal.id, reviewer_id="ana", override_reason="test deployment")
        )
        assert approved.status == "approved"

        report = ops.get_changes(GetChangesRequest(task_id="rules_judged", since=since.isoformat()))
        rule_runs = [r for r in report.runs if r.kind == "rule"]
        assert [r.cause_id for r in rule_runs] == [f"stance_llm v1: approve {proposal.id}"]
        assert rule_runs[0].claims_moved == 1
        (claim,) = report.claims
        assert claim.claim_id == judged and claim.confidence_change > 0
        (cause,) = claim.causes
        assert cause.kind == "rule_change" and cause.run_id == rule_runs[0].run_id
        assert cause.rule == f"stance_llm v1: approve {proposal.id}"
        # a task without stance evidence gets no rule run
        assert [r.kind for r in services.timeline.runs("rules_bare", None)] == ["ingest"]

        # a rollback is a deployment too: a run of its own, which moved nothing
        ops.rollback_rules(RollbackRulesRequest(component="stance_llm", version=0, reason="undo", reviewer_id="bo"))
        runs = [r for r in services.timeline.runs("rules_judged", since.isoformat()) if r.kind == "rule"]
        assert [r.cause_id for r in runs] == ["stance_llm v2: rollback to v0", f"stance_llm v1: approve {proposal.id}"]
        assert runs[0].claims_moved == 0

        timeline = ops.get_claim_timeline(GetClaimTimelineRequest(task_id="rules_judged", claim_id=judged))
        kinds = [e.detail.get("run_kind") for e in timeline.events if e.kind == "snapshot"]
        assert kinds == ["rule", "ingest"]
    finally:
        services.close()
