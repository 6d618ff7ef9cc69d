"""The learning loop for claim extraction, end to end on the real Neo4j with the real offline LLM (slow: every
extraction is an LLM call, a few seconds each on 2 cores).

Real abstracts are ingested with claim extraction; reviewers reject claims the LLM extracted (and one reviewer
restores a rejected one, which takes that claim out of the pattern). The rejections become one NEGATIVE_EXAMPLE
proposal for claim extraction whose effect is measured before review by extracting again from the same passages
with and without it (and from the passages of claims reviewers kept). Two approvals make the extractor drop the
rejected claims when the LLM returns them again; new extracted claims record the rule-set version; retiring the
rule ends it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lyra.bootstrap import Services
from lyra.core.errors import ConflictError
from lyra.core.settings import Settings
from lyra.ml.evaluation import load_pairs
from lyra.ml.learned_rules import CLAIM_EXTRACTION
from lyra.models.api import QueryGraphRequest
from lyra.models.ingest import IngestRequest
from lyra.models.learning import (
    ApproveProposalRequest,
    GenerateProposalsRequest,
    GetFeedbackRequest,
    RetireRuleRequest,
)
from lyra.models.trust import FeedbackRequest
from tests.support.helpers import ROOT, learning_services, write_abstracts

pytestmark = [pytest.mark.neo4j, pytest.mark.models]
ABSTRACTS = load_pairs(ROOT / "tests" / "data" / "learning_judge_errors.jsonl")
CLAIMS_QUERY = (
    "MATCH (:Task {id: $task})-[:HAS_CLAIM]->(c:Claim) WHERE EXISTS { (c)-[:EXTRACTED_FROM]->() } "
    "RETURN c.id AS id, c.text AS text, c.extraction_rules_version AS rules_version ORDER BY c.created_at, c.id"
)


@pytest.fixture
def loop(graph: Services, settings: Settings, tmp_path: Path) -> Iterator[Services]:
    # the LLM's time goes to claim extraction here
    with learning_services(settings, tmp_path, stance_use_llm=False) as svc:
        yield svc


def extract(services: Services, tmp_path: Path, task_id: str, index: int) -> list[dict[str, Any]]:
    """Ingest one real abstract into a new task with claim extraction; the claims the LLM extracted."""
    pair = ABSTRACTS[index]
    url = f"https://journals.example.org/{task_id}"
    path = write_abstracts(tmp_path / f"{task_id}.jsonl", [(pair.topic or pair.id, pair.premise, url)])
    request = IngestRequest(task_id=task_id, paths=[path], hypothesis=pair.hypothesis, extract_claims=True)
    services.operations.ingest(request)
    query = QueryGraphRequest(cypher=CLAIMS_QUERY, params={"task": task_id})
    return services.operations.query_graph(query).rows


def reject(services: Services, task_id: str, claim_id: str, reviewer: str) -> str:
    args = {"claim_id": claim_id, "reason": "a statement about the study, not a finding"}
    response = services.operations.feedback(
        FeedbackRequest(task_id=task_id, action="claim_reject", args=args, reviewer_id=reviewer)
    )
    assert response.record_id
    return response.record_id


def test_rejected_extracted_claims_become_a_measured_prompt_rule(loop: Services, tmp_path: Path) -> None:
    ops = loop.operations
    extracted = {f"learn_x_{i}": extract(loop, tmp_path, f"learn_x_{i}", i) for i in range(4)}
    assert all(rows for rows in extracted.values()), extracted
    assert {row["rules_version"] for rows in extracted.values() for row in rows} == {0}  # the base prompt

    # three rejections by two reviewers; a fourth rejection is undone by another reviewer
    reviewers = ["ana", "bo", "ana"]
    records = [reject(loop, f"learn_x_{i}", extracted[f"learn_x_{i}"][0]["id"], reviewers[i]) for i in range(3)]
    first = ops.get_feedback(GetFeedbackRequest(id=records[0]))
    assert first.component == CLAIM_EXTRACTION and first.kind == "correction"
    assert (first.predicted_label, first.correct_label) == ("extracted", "rejected")
    assert first.hypothesis == extracted["learn_x_0"][0]["text"] and first.premise == ABSTRACTS[0].premise
    assert first.topic == ABSTRACTS[0].hypothesis and first.rules_version == 0
    assert ops.get_feedback(GetFeedbackRequest(id=records[2])).classification == "generalizable_low"
    undone = extracted["learn_x_3"][0]["id"]
    reject(loop, "learn_x_3", undone, "cy")
    ops.feedback(
        FeedbackRequest(
            task_id="learn_x_3", action="claim_restore", args={"claim_id": undone, "reason": "it is a finding"},
            reviewer_id="bo",
        )
    )  # fmt: skip

    batch = ops.generate_proposals(GenerateProposalsRequest(measure=True))
    proposals = [p for p in batch.created if p.component == CLAIM_EXTRACTION]
    assert len(proposals) == 1, batch
    proposal = proposals[0]
    assert proposal.rule_type == "NEGATIVE_EXAMPLE" and proposal.key == "claims:extracted->rejected"
    assert sorted(proposal.evidence_ids) == sorted(records)  # the restored claim is not evidence
    shown = json.loads(proposal.content)
    assert [ex["claim"] for ex in shown] == [extracted[f"learn_x_{i}"][0]["text"] for i in range(3)]
    effect = proposal.predicted_effect
    print("predicted effect:", json.dumps(effect, indent=1))  # shown with pytest -s
    assert effect["measured"] and effect["rules_version_before"] == 0
    rejected = effect["rejected"]
    assert [c["claim"] for c in rejected["cases"]] == [ex["claim"] for ex in shown]
    for side in ("before", "after"):
        assert rejected[side]["re_extracted_rate"] == pytest.approx(
            sum(c[side] for c in rejected["cases"]) / 3, abs=1e-3
        )
    # the rule only drops claims, from the same answers: never more rejected claims, never more claims
    assert rejected["after"]["re_extracted_rate"] <= rejected["before"]["re_extracted_rate"]
    regression = effect["regression"]  # claims the LLM extracted that nobody rejected (the restored one included)
    assert 1 <= regression["pairs"] <= 3 and set(regression["delta"]) == {"kept_rate", "claims_per_passage"}
    assert regression["after"]["claims_per_passage"] <= regression["before"]["claims_per_passage"]

    # meta-review: two reviewers; the same one cannot approve twice
    assert ops.approve_proposal(ApproveProposalRequest(id=proposal.id, reviewer_id="ana")).status == "pending"
    with pytest.raises(ConflictError):
        ops.approve_proposal(ApproveProposalRequest(id=proposal.id, reviewer_id="ana"))
    kwargs: dict[str, Any] = {}
    delta = regression["delta"]["kept_rate"]
    if delta < -loop.settings.learning.learning_regression_tolerance:  # the deploy gate reads the kept claims' rate
        kwargs["override_reason"] = "measured on a handful of passages"
    approved = ops.approve_proposal(ApproveProposalRequest(id=proposal.id, reviewer_id="bo", **kwargs))
    assert approved.status == "approved" and approved.rule_id

    # deployed: the extractor drops the rejected claims; new extracted claims record the rule set
    shown_rule = [row for row in loop.learning.report_rows() if row["id"] == approved.rule_id]
    assert shown_rule[0]["predicted"].startswith("rejected claims returned")  # the report page words it
    rules = loop.learning.rulebook.rules(CLAIM_EXTRACTION)
    assert rules.version == 1 and [ex["claim"] for ex in rules.examples] == [ex["claim"] for ex in shown]
    after = extract(loop, tmp_path, "learn_x_after", 0)  # the first rejected claim's abstract, in a new task
    assert {row["rules_version"] for row in after} <= {1}
    assert not {row["text"] for row in after} & {ex["claim"] for ex in shown}  # a rejected claim does not return
    ops.retire_rule(RetireRuleRequest(id=str(approved.rule_id), reason="checking the retirement", reviewer_id="cy"))
    assert loop.learning.rulebook.rules(CLAIM_EXTRACTION).examples == ()
