"""The judging queue benchmark's loop on the real Neo4j (benchmarks/judge_queue.py): every order works through the
real next_judgments / submit_judgments door, the distance it reads at budget 0 is the formula's over the offline
edges, and an assistant without mistakes that judges every pair reaches the gold confidences exactly.

The offline edges are written from verdicts this test chooses (data, not a model); the answers come from the
benchmark's simulated assistant (gold labels with mistakes drawn at a rate), not a model."""

from __future__ import annotations

from collections import defaultdict

import pytest

from benchmarks.judge_queue import (
    POLICIES,
    LabelledPair,
    SimulatedAssistant,
    build_task,
    confidence_of,
    distance,
    gold_confidences,
    read_confidences,
    run_policy,
    write_passages,
)
from lyra.bootstrap import Services

pytestmark = pytest.mark.neo4j

PREFIX = "https://judge-queue.bench.invalid/test/"
RELATIONS = ("SUPPORTS", "REFUTES", "NEUTRAL")


def labelled() -> tuple[list[LabelledPair], dict[str, tuple[str, float]]]:
    """Six claims with two passages each; the offline verdicts: wrong on every third pair, confidences spread."""
    pairs: list[LabelledPair] = []
    verdicts: dict[str, tuple[str, float]] = {}
    for c in range(6):
        for k in range(2):
            pid = f"p{c}{k}"
            gold = RELATIONS[(c + k) % 3]
            pairs.append(LabelledPair(pid, f"Claim {c}: drug {c} lowers blood pressure.", f"Trial {c}-{k}.", "", gold))
            offline = RELATIONS[(RELATIONS.index(gold) + 1) % 3] if (2 * c + k) % 3 == 0 else gold
            verdicts[pid] = (offline, round(0.35 + 0.05 * (2 * c + k), 2))
    return pairs, verdicts


@pytest.mark.parametrize("policy", POLICIES)
def test_each_order_reaches_the_gold_confidences_without_mistakes(graph: Services, policy: str) -> None:
    pairs, verdicts = labelled()
    page_ids, fragment_ids = write_passages(graph, pairs, PREFIX)
    built = build_task(graph, f"jq_{policy}", pairs, page_ids, fragment_ids, verdicts, "offline:test-verdicts")
    gold_conf = gold_confidences(built.gold, 0.9)
    # budget 0: what Neo4j computes over the offline edges is the formula over the same edges
    per_claim: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for key, pid in built.pair_ids.items():
        per_claim[key[0]].append(verdicts[pid])
    expected = distance({c: confidence_of(e) for c, e in per_claim.items()}, gold_conf)
    assistant = SimulatedAssistant({p.pair_id: p.relation for p in pairs}, 0.0, 0.9, seed=3)
    curve, flagged = run_policy(graph, built, policy, assistant, [0, 5, 12, 20], 5, gold_conf, shuffle_seed=3)
    assert [b for b, _ in curve] == [0, 5, 12, 20]
    assert curve[0][1].mean_abs == pytest.approx(expected.mean_abs, abs=1e-9) and expected.mean_abs > 0.05
    assert curve[-2][1].mean_abs == pytest.approx(0.0, abs=1e-9) and curve[-2][1].right_side == 1.0
    assert curve[-1][1] == curve[-2][1]  # the queue ran out at 12: larger budgets read the same
    assert flagged == 0
    rows = graph.store.driver.execute_query(
        "MATCH (:Task {id: $t})-[:HAS_CLAIM]->(c)<-[r]-() RETURN r.judge AS judge",
        {"t": built.task_id},
        database_=graph.store.database,
    ).records
    assert len(rows) == 12 and {r["judge"] for r in rows} == {"assistant:simulated/gold-with-flips"}


def test_mistakes_leave_a_distance_and_uncertain_takes_the_least_sure_pairs_first(graph: Services) -> None:
    pairs, verdicts = labelled()
    page_ids, fragment_ids = write_passages(graph, pairs, PREFIX)
    built = build_task(graph, "jq_mistakes", pairs, page_ids, fragment_ids, verdicts, "offline:test-verdicts")
    gold_conf = gold_confidences(built.gold, 0.9)
    assistant = SimulatedAssistant({p.pair_id: p.relation for p in pairs}, 0.5, 0.9, seed=1)
    assert assistant.mistakes > 0
    curve, _ = run_policy(graph, built, "uncertain", assistant, [5, 12], 5, gold_conf, shuffle_seed=1)
    # after the first batch: the five least sure offline pairs carry the assistant's answers, the rest are offline
    least_sure = sorted(pairs, key=lambda p: verdicts[p.pair_id][1])[:5]
    answered = {p.pair_id for p in least_sure}
    per_claim: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for key, pid in built.pair_ids.items():
        edge = (assistant.answers[pid], 0.9) if pid in answered else verdicts[pid]
        per_claim[key[0]].append(edge)
    assert curve[1][1].mean_abs == pytest.approx(
        distance({c: confidence_of(e) for c, e in per_claim.items()}, gold_conf).mean_abs, abs=1e-9
    )
    assert curve[-1][1].mean_abs > 0.0
    assert read_confidences(graph, built.task_id).keys() == gold_conf.keys()
