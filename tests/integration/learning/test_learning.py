"""The learning loop on the real Neo4j with the real embedder (no LLM here: proposals are made without measuring;
tests/integration/learning/test_learning_loop.py runs the loop end to end with the judge and the local LLM)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from pydantic import SecretStr, ValidationError

from lyra.api.app import create_app
from lyra.bootstrap import Services, build_services
from lyra.core.errors import ConflictError, InvalidInputError, NotFoundError
from lyra.core.settings import Settings
from lyra.mcp.server import create_mcp_server
from lyra.ml.learned_rules import CLAIM_EXTRACTION, STANCE_LLM, STANCE_TRAINED
from lyra.ml.nli import LLMStanceJudge
from lyra.ml.vector_index import SUFFIX
from lyra.models.api import QueryGraphRequest
from lyra.models.learning import (
    ApproveProposalRequest,
    FeedbackForComponentRequest,
    FindSimilarRequest,
    GenerateProposalsRequest,
    GetFeedbackRequest,
    ListProposalsRequest,
    ListRulesRequest,
    ProposeRuleRequest,
    RejectProposalRequest,
    RetireRuleRequest,
    RollbackRulesRequest,
)
from lyra.models.trust import FeedbackRequest
from lyra.services.learning import LearningService
from lyra.services.learning_rules import STANCE_GUIDELINES
from lyra.sources.injection import Fence
from tests.support.learning import OVERCALLED, correct, seed

pytestmark = [pytest.mark.neo4j, pytest.mark.models]

# Pairs a judge called NEUTRAL that a reviewer says SUPPORT (the reverse of OVERCALLED).
UNDERCALLED = [
    ("Drip irrigation raised grape yield by 18% (p<0.01) in 40 vineyards.", "Drip irrigation raises grape yield."),
    ("Homework of 30 minutes a day raised exam scores by 6 points.", "Homework improves exam results."),
    ("Cushioned shoes halved knee injuries among 800 runners.", "Cushioned shoes prevent knee injury."),
]


@pytest.fixture
def learning(graph: Services, settings: Settings, tmp_path: Path) -> Iterator[Services]:
    svc = build_services(
        settings.model_copy(update={"state_dir": tmp_path / "state", "learning_min_evidence": 3}), apply_schema=False
    )
    yield svc
    svc.close()


FENCE = Fence.new()


def stance_prompt(judge: LLMStanceJudge) -> str:
    """The stance LLM's prompt as the judge renders it now, with the rules in force (no LLM call)."""
    return judge._messages("question", "A passage.", "A claim.", FENCE, "support")[0]["content"]


def test_feedback_becomes_classified_records_with_their_reviewer_and_similar_contexts(
    learning: Services, tmp_path: Path
) -> None:
    edges = seed(learning, tmp_path, "learn_records", OVERCALLED[:3], "SUPPORTS")
    first = correct(learning, "learn_records", edges[0], "neutral", "ana", "reports intake, not its effect on sleep")
    assert first.record_id and first.classification == "edge_case"
    record = learning.operations.get_feedback(GetFeedbackRequest(id=first.record_id))
    assert (record.kind, record.component, record.reviewer_id, record.tags) == ("correction", "stance", "ana", ["t"])
    assert (record.predicted_label, record.correct_label, record.edge_id) == ("entailment", "neutral", edges[0])
    assert record.premise == OVERCALLED[0][0] and record.hypothesis == OVERCALLED[0][1]
    assert record.comment == "reports intake, not its effect on sleep"
    assert correct(learning, "learn_records", edges[1], "neutral", "bo").classification == "generalizable_low"
    kept = correct(learning, "learn_records", edges[2], "supports", "bo")  # the label was right
    assert kept.classification == "positive"
    # the same edge judged otherwise by another reviewer: they disagree
    assert correct(learning, "learn_records", edges[0], "refutes", "cy").classification == "ambiguous"
    records = learning.operations.get_feedback_for_component(FeedbackForComponentRequest(component="stance")).records
    assert [r.classification for r in records] == ["ambiguous", "positive", "generalizable_low", "edge_case"]
    assert records[0].kind == "relabel" and records[0].predicted_label == "neutral"

    similar = learning.operations.find_similar_feedback(FindSimilarRequest(id=first.record_id, threshold=0.5))
    assert similar.similar and similar.similar[0].record.edge_id == edges[0]  # the relabel of the same edge
    assert all(s.similarity >= 0.5 for s in similar.similar)
    assert (
        learning.operations.find_similar_feedback(FindSimilarRequest(id=first.record_id, threshold=0.99)).similar == []
    )

    # the index survives a restart and is rebuilt from Neo4j when its file is gone
    saved = (learning.settings.paths.state_dir / "faiss" / "feedback").with_suffix(SUFFIX)
    assert saved.exists()
    saved.unlink()
    again = build_services(learning.settings, apply_schema=False)
    try:
        rebuilt = again.operations.find_similar_feedback(FindSimilarRequest(id=first.record_id, threshold=0.5))
        assert [s.record.id for s in rebuilt.similar] == [s.record.id for s in similar.similar]
    finally:
        again.close()

    domain = learning.operations.feedback(
        FeedbackRequest(
            task_id="learn_records", action="domain_block", args={"domain_pattern": "spam.example.info", "reason": "x"}
        )
    )
    block = learning.operations.get_feedback(GetFeedbackRequest(id=str(domain.record_id)))
    assert (block.component, block.domain, block.reviewer_id) == ("domain_policy", "spam.example.info", "anonymous")
    with pytest.raises(NotFoundError):
        learning.operations.get_feedback(GetFeedbackRequest(id="fbr_missing"))


def test_proposals_need_two_reviewers_take_effect_in_the_prompt_and_can_be_retired_and_rolled_back(
    learning: Services, tmp_path: Path
) -> None:
    ops = learning.operations
    judge = learning.models.llm_questions()  # the LLM's questions of the default judge, reading the rules in force
    base_prompt = stance_prompt(judge)
    base_id = judge.model_id
    edges = seed(learning, tmp_path, "learn_rules", OVERCALLED, "SUPPORTS")
    for i, edge in enumerate(edges[:2]):
        correct(learning, "learn_rules", edge, "neutral", ["ana", "bo"][i])
    two = ops.generate_proposals(GenerateProposalsRequest(measure=False))
    assert two.created == [] and any("2 new correction(s), 3 needed" in s for s in two.skipped)
    correct(learning, "learn_rules", edges[2], "neutral", "cy")
    batch = ops.generate_proposals(GenerateProposalsRequest(measure=False))
    kinds = {(p.component, p.rule_type): p for p in batch.created}
    assert len(kinds) == len(batch.created) == 3
    guideline, example = kinds[(STANCE_LLM, "GUIDELINE")], kinds[(STANCE_TRAINED, "NEGATIVE_EXAMPLE")]
    shot = kinds[(STANCE_LLM, "NEGATIVE_EXAMPLE")]  # a few-shot example for the LLM, from the most confident mistake
    assert json.loads(shot.content) == {
        "passage": OVERCALLED[0][0],
        "claim": OVERCALLED[0][1],
        "support": "no",
        "contradict": "no",
        "three_way": "neutral",
    }
    assert (guideline.rule_type, guideline.key) == ("GUIDELINE", "stance:entailment->neutral")
    assert guideline.content == STANCE_GUIDELINES["entailment->neutral"]
    assert len(guideline.evidence_ids) == 3 and guideline.status == "pending"
    assert example.rule_type == "NEGATIVE_EXAMPLE" and len(json.loads(example.content)) == 3
    # a later correction of the same pattern joins the pending proposals instead of making new ones
    fourth = correct(learning, "learn_rules", edges[3], "neutral", "ana")
    more = ops.generate_proposals(GenerateProposalsRequest(measure=False))
    assert more.created == [] and more.consolidated[guideline.id] == [fourth.record_id]
    assert more.consolidated[shot.id] == more.consolidated[example.id] == [fourth.record_id]
    ops.reject_proposal(RejectProposalRequest(id=shot.id, reason="one example is too specific", reviewer_id="ana"))

    # an unmeasured guideline needs an override reason; rejection needs a reason
    with pytest.raises(InvalidInputError, match="no measured predicted effect"):
        ops.approve_proposal(ApproveProposalRequest(id=guideline.id, reviewer_id="ana"))
    with pytest.raises(ValidationError):
        RejectProposalRequest(id=guideline.id, reason="  ")
    # the example for the trained judge: one reviewer is not enough, a second distinct one activates it
    half = ops.approve_proposal(ApproveProposalRequest(id=example.id, reviewer_id="ana"))
    assert half.status == "pending" and [r.reviewer_id for r in half.reviews] == ["ana"]
    with pytest.raises(ConflictError, match="ana already approved"):
        ops.approve_proposal(ApproveProposalRequest(id=example.id, reviewer_id="ana"))
    done = ops.approve_proposal(ApproveProposalRequest(id=example.id, reviewer_id="bo"))
    assert done.status == "approved" and done.rule_id
    data = learning.settings.paths.state_dir / "learning" / STANCE_TRAINED / "data_v1.jsonl"
    # the exact change reviewers approved: the three pairs it was made from (later evidence only supports it)
    assert len(data.read_text(encoding="utf-8").splitlines()) == 3
    # the guideline, approved by one reviewer with a logged override reason
    reason = "measured by hand on the review queue"
    approved = ops.approve_proposal(ApproveProposalRequest(id=guideline.id, reviewer_id="cy", override_reason=reason))
    assert approved.status == "approved" and approved.reviews[-1].override and approved.reviews[-1].reason == reason
    prompt = stance_prompt(judge)
    assert "Learned rules (from reviewed corrections):" in prompt and guideline.content in prompt
    assert base_prompt != prompt
    assert judge.model_id.startswith(f"{base_id}+rules:stance_llm@v1:")
    page = ops.report_html("learn_rules")
    assert "Learned rules in force" in page and approved.rule_id in page and "not measured" in page

    # a proposal pulling the other way is flagged with the rule it contradicts
    reverse = seed(learning, tmp_path, "learn_reverse", UNDERCALLED, "NEUTRAL")
    for edge, reviewer in zip(reverse, ["ana", "bo", "cy"], strict=True):
        correct(learning, "learn_reverse", edge, "supports", reviewer)
    flagged = next(
        p
        for p in ops.generate_proposals(GenerateProposalsRequest(measure=False)).created
        if p.component == STANCE_LLM and p.rule_type == "GUIDELINE"
    )
    assert flagged.key == "stance:neutral->entailment"
    assert [c.rule_id for c in flagged.conflicts] == [approved.rule_id]
    with pytest.raises(InvalidInputError, match="contradicts active rule"):
        ops.approve_proposal(ApproveProposalRequest(id=flagged.id, reviewer_id="ana"))
    rejected = ops.reject_proposal(RejectProposalRequest(id=flagged.id, reason="contradicts lrl", reviewer_id="bo"))
    assert rejected.status == "rejected" and rejected.reviews[-1].reason == "contradicts lrl"
    with pytest.raises(ConflictError):
        ops.approve_proposal(ApproveProposalRequest(id=flagged.id, reviewer_id="cy", override_reason="x"))
    assert [p.id for p in ops.list_proposals(ListProposalsRequest(status="rejected")).proposals] == [
        flagged.id,
        shot.id,
    ]

    # retire: the prompt is the base prompt again; rollback: the rule set of version 1 again
    rules = ops.list_rules(ListRulesRequest(component=STANCE_LLM))
    assert [r.id for r in rules.rules] == [approved.rule_id] and rules.rule_sets[0].version == 1
    retired = ops.retire_rule(RetireRuleRequest(id=str(approved.rule_id), reason="too broad", reviewer_id="ana"))
    assert [r.status for r in retired.rules] == ["retired"] and retired.rule_sets[0].version == 2
    assert stance_prompt(judge) == base_prompt and judge.model_id == base_id
    with pytest.raises(ConflictError):
        ops.retire_rule(RetireRuleRequest(id=str(approved.rule_id), reason="again"))
    restored = ops.rollback_rules(RollbackRulesRequest(component=STANCE_LLM, version=1, reason="retired by mistake"))
    assert [r.status for r in restored.rules] == ["active"] and restored.rule_sets[0].version == 3
    assert restored.rule_sets[0].cause == "rollback to v1"
    assert stance_prompt(judge) == prompt
    assert judge.model_id.startswith(f"{base_id}+rules:stance_llm@v3:")


def test_an_mcp_review_names_the_calling_client_and_a_rest_review_the_token(
    learning: Services, tmp_path: Path, settings: Settings
) -> None:
    edges = seed(learning, tmp_path, "learn_doors", OVERCALLED[:3], "SUPPORTS")
    for edge, reviewer in zip(edges, ["ana", "bo", "cy"], strict=True):
        correct(learning, "learn_doors", edge, "neutral", reviewer)
    created = learning.operations.generate_proposals(GenerateProposalsRequest(measure=False)).created
    example = next(p for p in created if p.component == STANCE_TRAINED)
    guideline = next(p for p in created if p.component == STANCE_LLM and p.rule_type == "GUIDELINE")
    shot = next(p for p in created if p.component == STANCE_LLM and p.rule_type == "NEGATIVE_EXAMPLE")
    judge = learning.models.llm_questions()
    assert OVERCALLED[0][0] not in stance_prompt(judge)
    learning.operations.approve_proposal(ApproveProposalRequest(id=shot.id, reviewer_id="ana", override_reason="x"))
    prompt = stance_prompt(judge)
    assert f"{OVERCALLED[0][1]}\nDoes the passage give evidence that the claim is TRUE? no" in prompt
    assert prompt.index(OVERCALLED[0][0]) < prompt.rindex("A passage.")  # after the built-in examples, before the pair

    async def approve() -> Any:
        async with Client(create_mcp_server(learning.operations)) as client:
            return await client.call_tool("approve_proposal", {"id": example.id})

    result = anyio.run(approve)
    assert not result.is_error, result
    reviewer = result.structured_content["reviews"][0]["reviewer_id"]
    assert reviewer.startswith("mcp:") and len(reviewer) > 4

    app = create_app(
        learning.operations, settings.api.model_copy(update={"api_token": SecretStr("s3cret-token-for-tests")})
    )
    transport = httpx.ASGITransport(app=app)

    async def reject() -> httpx.Response:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.post(
                f"/api/v1/learning/proposals/{guideline.id}/reject",
                json={"reason": "too broad"},
                headers={"Authorization": "Bearer s3cret-token-for-tests"},
            )

    response = anyio.run(reject)
    assert response.status_code == 200, response.text
    review = response.json()["reviews"][0]
    assert review["reviewer_id"].startswith("rest-token:") and "s3cret" not in review["reviewer_id"]
    assert review["decision"] == "reject" and review["reason"] == "too broad"


def test_an_overconfident_judge_gets_a_calibration_refit_proposal_that_two_approvals_activate(
    learning: Services, tmp_path: Path
) -> None:
    n = 40
    pairs = [(f"Passage {i} about the topic of trial {i}.", f"Claim {i} holds.") for i in range(n)]
    # overconfident: right on a quarter (at 0.95), wrong on the rest at 0.72-0.88
    confidences = [0.95 if i % 4 == 0 else 0.72 + 0.004 * i for i in range(n)]
    edges = seed(learning, tmp_path, "learn_calib", pairs, "SUPPORTS", confidences)
    for i, edge in enumerate(edges):
        correct(learning, "learn_calib", edge, "supports" if i % 4 == 0 else "neutral", "ana")
    batch = learning.operations.generate_proposals(GenerateProposalsRequest(measure=False))
    refit = next((p for p in batch.created if p.rule_type == "CALIBRATION_REFIT"), None)
    assert refit is not None, batch.skipped
    effect = refit.predicted_effect
    assert effect["measured"] and effect["ece_after"] < effect["ece_before"]
    version = json.loads(refit.content)["calibrator_version"]
    assert learning.calibration.active_calibrator() == (None, None)
    again = learning.operations.generate_proposals(GenerateProposalsRequest(measure=False))
    assert not [p for p in again.created if p.rule_type == "CALIBRATION_REFIT"]
    learning.operations.approve_proposal(ApproveProposalRequest(id=refit.id, reviewer_id="ana"))
    assert learning.calibration.active_calibrator() == (None, None)
    learning.operations.approve_proposal(ApproveProposalRequest(id=refit.id, reviewer_id="bo"))
    calibrator, active = learning.calibration.active_calibrator()
    assert active == version and calibrator is not None
    page = learning.operations.report_html("learn_calib")
    assert f"ECE {effect['ece_before']:.3f} -&gt; {effect['ece_after']:.3f}" in page


def test_a_reviewer_written_guideline_for_claim_extraction_needs_two_approvals_and_reaches_its_prompt(
    learning: Services,
) -> None:
    ops = learning.operations
    text = "State the population and the outcome in every extracted claim."
    proposal = ops.propose_rule(
        ProposeRuleRequest(
            component=CLAIM_EXTRACTION, content=text, reason="claims lacked populations", reviewer_id="ana"
        )
    )
    assert proposal.status == "pending" and proposal.evidence_summary == "written by ana: claims lacked populations"
    assert proposal.predicted_effect["measured"] is False and "claim_extraction.j2" in proposal.insertion_point
    source = learning.learning.rulebook.source(CLAIM_EXTRACTION)
    ops.approve_proposal(ApproveProposalRequest(id=proposal.id, reviewer_id="ana"))
    assert source().guidelines == ()
    ops.approve_proposal(ApproveProposalRequest(id=proposal.id, reviewer_id="bo"))
    assert source().guidelines == (text,) and source().version == 1
    with pytest.raises(ConflictError, match="already says exactly this"):
        ops.propose_rule(ProposeRuleRequest(component=CLAIM_EXTRACTION, content=text, reason="again"))
    with pytest.raises(NotFoundError):
        ops.propose_rule(
            ProposeRuleRequest(
                component=CLAIM_EXTRACTION, content=text + " Also", reason="x", evidence_ids=["fbr_none"]
            )
        )
    assert learning.ingest.claim_rules is not None and learning.ingest.claim_rules().guidelines == (text,)


def test_enough_new_corrections_start_a_proposal_batch_by_themselves(
    graph: Services, settings: Settings, tmp_path: Path
) -> None:
    svc = build_services(
        settings.model_copy(update={"state_dir": tmp_path / "state", "learning_auto_propose_after": 3}),
        apply_schema=False,
    )
    try:
        # without a judge to measure with (no LLM in this test): the batch's proposals say they were not measured
        svc.__dict__["learning"] = LearningService(
            svc.store,
            svc.settings.learning,
            svc.settings.paths.state_dir,
            svc.calibration,
            embedder=lambda: svc.models.embedder,
        )
        edges = seed(svc, tmp_path, "learn_auto", OVERCALLED[:3], "SUPPORTS")
        for edge, reviewer in zip(edges[:2], ["ana", "bo"], strict=True):
            correct(svc, "learn_auto", edge, "neutral", reviewer)
        assert svc.operations.list_proposals(ListProposalsRequest()).proposals == []
        correct(svc, "learn_auto", edges[2], "neutral", "cy")
        deadline = time.monotonic() + 60
        proposals: list[Any] = []
        while time.monotonic() < deadline and len(proposals) < 3:
            time.sleep(0.5)
            proposals = svc.operations.list_proposals(ListProposalsRequest()).proposals
        assert sorted((p.component, p.rule_type) for p in proposals) == [
            (STANCE_LLM, "GUIDELINE"),
            (STANCE_LLM, "NEGATIVE_EXAMPLE"),
            (STANCE_TRAINED, "NEGATIVE_EXAMPLE"),
        ]
        guideline = next(p for p in proposals if p.rule_type == "GUIDELINE")
        assert guideline.predicted_effect == {"measured": False, "why": "no judge to measure with"}
    finally:
        lock = svc.learning._batch_lock  # let the background batch finish before the driver closes
        if lock.acquire(timeout=60):
            lock.release()
        svc.close()


def test_reviews_of_verdicts_made_under_a_rule_are_its_observed_effect_and_can_flag_it_for_sunset(
    learning: Services, tmp_path: Path
) -> None:
    ops = learning.operations
    proposal = ops.propose_rule(
        ProposeRuleRequest(
            component=STANCE_LLM, content="Answer no to both unless the passage measures it.", reason="x", measure=False
        )
    )
    approved = ops.approve_proposal(ApproveProposalRequest(id=proposal.id, reviewer_id="ana", override_reason="test"))
    edges = seed(learning, tmp_path, "learn_sunset", OVERCALLED, "SUPPORTS")
    rows = ops.query_graph(
        QueryGraphRequest(
            cypher="MATCH (f:Fragment)-[r]->(c:Claim)<-[:HAS_CLAIM]-(:Task {id: $t}) RETURN f.id AS f, c.id AS c",
            params={"t": "learn_sunset"},
        )
    ).rows
    pairs = [{"fragment_id": r["f"], "claim_id": r["c"]} for r in rows]
    stamped = learning.store.run("learning/stamp_edges", {"pairs": pairs, "judge_id": "judge-x", "rules_version": 1})
    assert stamped[0]["stamped"] == 4  # as ingest stamps the verdicts it writes under rule set v1
    for edge, relation in zip(edges, ["neutral", "neutral", "neutral", "supports"], strict=True):
        record = correct(learning, "learn_sunset", edge, relation, "bo")
    kept = ops.get_feedback(GetFeedbackRequest(id=record.record_id))
    assert (kept.kind, kept.judge_id, kept.rules_version) == ("confirmation", "judge-x", 1)
    (rule,) = ops.list_rules(ListRulesRequest(component=STANCE_LLM)).rules
    assert rule.id == approved.rule_id
    assert rule.observed["reviews"] == 4 and rule.observed["kept"] == 1 and rule.observed["corrected"] == 3
    assert rule.observed["flag"].startswith("sunset")
