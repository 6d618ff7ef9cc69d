"""The learning loop's CONSTRAINT rules, end to end on the real Neo4j with the real offline models (the trained
judge without the LLM, the real embedder and ranker).

Real abstracts are ingested into three tasks, each claim's own abstract served from one domain and two other
abstracts from another. Reviewers correct every verdict on the first domain's passages (in three tasks) and keep one
on the second's. That becomes one CONSTRAINT proposal for evidence ranking — the domain's passages rank at half
their weight — measured before review by ranking the tasks' passages again with and without it. Two approvals
deploy it: ingest ranks under it and records its rule-set version; retiring it restores the ranking exactly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lyra.bootstrap import Services
from lyra.core.errors import InvalidInputError
from lyra.core.settings import Settings
from lyra.ml.evaluation import load_pairs
from lyra.ml.learned_rules import EVIDENCE_RANKING
from lyra.models.api import QueryGraphRequest
from lyra.models.ingest import IngestReport, IngestRequest
from lyra.models.learning import (
    ApproveProposalRequest,
    GenerateProposalsRequest,
    ProposeRuleRequest,
    RetireRuleRequest,
)
from lyra.models.trust import FeedbackRequest
from tests.support.helpers import ROOT, learning_services, write_abstracts

pytestmark = [pytest.mark.neo4j, pytest.mark.models]
ABSTRACTS = load_pairs(ROOT / "tests" / "data" / "learning_judge_errors.jsonl")
MILL, JOURNAL = "mill.example.com", "journal.example.org"
EDGES = (
    "MATCH (:Task {id: $task})-[:HAS_CLAIM]->(:Claim)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment)"
    "-[:EXTRACTED_FROM]->(p:Page) RETURN r.id AS id, type(r) AS relation, p.domain AS domain ORDER BY r.id"
)
ANOTHER = {"SUPPORTS": "neutral", "NEUTRAL": "refutes", "REFUTES": "neutral"}


@pytest.fixture
def loop(graph: Services, settings: Settings, tmp_path: Path) -> Iterator[Services]:
    with learning_services(
        settings,
        tmp_path,
        stance_use_llm=False,
        # every passage is a candidate (no relevance floor) and a task may judge two pairs: of the three passages
        # per claim, two are judged, and the ranking (relevance times domain weight) decides which
        relevance_floor=-1.0,
        task_pair_budget=2,
        nli_top_k=2,  # the depth the ranking rule's measurement compares
        learning_propose_examples=False,
    ) as svc:
        yield svc


def ingest(services: Services, tmp_path: Path, task_id: str, index: int) -> IngestReport:
    """Task ``index``: its claim, its own abstract on the mill's domain and two other abstracts on the journal's."""
    pair = ABSTRACTS[index]
    others = [ABSTRACTS[(index + 3) % len(ABSTRACTS)], ABSTRACTS[(index + 6) % len(ABSTRACTS)]]
    records = [
        (p.id, p.premise, f"https://{domain}/{task_id}/{n}")
        for n, (p, domain) in enumerate([(pair, MILL), (others[0], JOURNAL), (others[1], JOURNAL)])
    ]
    path = write_abstracts(tmp_path / f"{task_id}.jsonl", records)
    return services.operations.ingest(IngestRequest(task_id=task_id, paths=[path], claims=[pair.hypothesis]))


def edges(services: Services, task_id: str) -> list[dict[str, Any]]:
    return services.operations.query_graph(QueryGraphRequest(cypher=EDGES, params={"task": task_id})).rows


def test_a_domains_corrected_verdicts_become_a_measured_ranking_constraint(loop: Services, tmp_path: Path) -> None:
    ops = loop.operations
    tasks = [f"learn_rank_{i}" for i in range(3)]
    reports = [ingest(loop, tmp_path, task, i) for i, task in enumerate(tasks)]
    assert all(r.ranking_rules_version == 0 and (r.pairs_ranked, r.pairs_judged) == (3, 2) for r in reports)
    judged = {task: edges(loop, task) for task in tasks}
    mill = [(task, e) for task in tasks for e in judged[task] if e["domain"] == MILL]
    journal = [(task, e) for task in tasks for e in judged[task] if e["domain"] == JOURNAL]
    assert len({task for task, _ in mill}) >= 2 and journal, judged  # the mill's passages rank high before
    reviewers = ["ana", "bo"]
    for n, (task, edge) in enumerate(mill):
        args = {"edge_id": edge["id"], "correct_relation": ANOTHER[edge["relation"]], "reason": "paper mill"}
        ops.feedback(FeedbackRequest(task_id=task, action="edge_correct", args=args, reviewer_id=reviewers[n % 2]))
    task, kept = journal[0]
    args = {"edge_id": kept["id"], "correct_relation": kept["relation"].lower(), "reason": "right"}
    ops.feedback(FeedbackRequest(task_id=task, action="edge_correct", args=args, reviewer_id="cy"))

    batch = ops.generate_proposals(GenerateProposalsRequest(measure=True))
    proposals = [p for p in batch.created if p.component == EVIDENCE_RANKING]
    assert len(proposals) == 1, batch  # the journal, with its one kept verdict, gets none
    proposal = proposals[0]
    assert proposal.rule_type == "CONSTRAINT" and proposal.key == f"ranking:domain:{MILL}"
    assert json.loads(proposal.content)["domain"] == MILL and len(proposal.evidence_ids) == len(mill)
    effect = proposal.predicted_effect
    print("predicted effect:", json.dumps(effect, indent=1))  # shown with pytest -s
    assert effect["measured"] and effect["correction_rate"] == 1.0 and effect["top_k"] == 2
    corrected, regression = effect["corrected"], effect["regression"]
    assert corrected["pairs"] == len(mill) and regression["pairs"] == 1
    assert corrected["before"]["in_top_k"] == 1.0  # they were judged, so they were in the top 2
    # a lower weight for the mill's passages only: they can only fall, the journal's only rise
    assert all(c["after"] >= c["before"] for c in corrected["cases"])
    assert all(c["after"] <= c["before"] for c in regression["cases"])
    assert regression["after"]["kept_rate"] == 1.0

    # a reviewer cannot write a ranking guideline; two approvals deploy the constraint
    with pytest.raises(InvalidInputError, match="evidence_ranking"):
        ops.propose_rule(
            ProposeRuleRequest(component="evidence_ranking", content="Rank paper mills lower.", reason="mills")
        )
    assert ops.approve_proposal(ApproveProposalRequest(id=proposal.id, reviewer_id="ana")).status == "pending"
    approved = ops.approve_proposal(ApproveProposalRequest(id=proposal.id, reviewer_id="bo"))
    assert approved.status == "approved" and approved.rule_id
    rules = loop.learning.rulebook.rules(EVIDENCE_RANKING)
    assert rules.version == 1 and rules.constraints[0]["domain"] == MILL
    shown = [row for row in loop.learning.report_rows() if row["id"] == approved.rule_id]
    assert "corrected passages' mean rank" in shown[0]["predicted"]  # the report page words it

    # the ranking ingest uses now is exactly the measured "after"; a new ingest records the rule set
    base = loop.learning.rulebook.load(EVIDENCE_RANKING, 0)
    ranked = {task: loop.ingest.rank_task(task, (base, rules)) for task in tasks}
    order_before = {task: orders[0] for task, orders in ranked.items()}
    order_after = {task: orders[1] for task, orders in ranked.items()}
    for case in [*corrected["cases"], *regression["cases"]]:
        for side, order in (("before", order_before), ("after", order_after)):
            assert order[case["task_id"]][case["claim_id"]].index(case["fragment_id"]) + 1 == case[side]
    report = ingest(loop, tmp_path, "learn_rank_new", 3)
    assert report.ranking_rules_version == 1

    ops.retire_rule(RetireRuleRequest(id=str(approved.rule_id), reason="checking the retirement", reviewer_id="cy"))
    retired = loop.learning.rulebook.rules(EVIDENCE_RANKING)
    assert retired.version == 2 and retired.constraints == ()
    assert {task: loop.ingest.rank_task(task, (retired,))[0] for task in tasks} == order_before
