"""The judging queue benchmark's metric and its simulated assistant, without Neo4j.

The assistant here is the benchmark's own stand-in (``SimulatedAssistant``: gold labels with mistakes drawn at a
chosen rate), not a model; the loop over the real door is run by ``python -m benchmarks.judge_queue``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.judge_queue import (
    BLOCK_BEGIN,
    BLOCK_END,
    CurvePoint,
    JudgeQueueResult,
    LabelledPair,
    SimulatedAssistant,
    block_name,
    choose_claims,
    confidence_of,
    distance,
    gold_confidences,
    markers,
    one_label_per_pair,
    read_pairs,
    read_sentence_pairs,
    replace_block,
    side,
    summarise,
    to_markdown,
)
from lyra.core.errors import InvalidInputError

RELATIONS = ("SUPPORTS", "REFUTES", "NEUTRAL")


def gold_pairs(claims: int, per_claim: int) -> dict[tuple[str, str], str]:
    return {(f"c{c}", f"f{c}_{k}"): RELATIONS[(c * 7 + k * 3) % 3] for c in range(claims) for k in range(per_claim)}


def confidences(edges: dict[tuple[str, str], tuple[str, float]]) -> dict[str, float]:
    per_claim: dict[str, list[tuple[str, float]]] = {}
    for (claim, _), edge in edges.items():
        per_claim.setdefault(claim, []).append(edge)
    return {claim: confidence_of(e) for claim, e in per_claim.items()}


def test_confidence_is_the_posterior_mean_of_decision_record_0003() -> None:
    assert confidence_of([]) == 0.5
    assert confidence_of([("SUPPORTS", 0.9)]) == pytest.approx(1.9 / 2.9)
    assert confidence_of([("SUPPORTS", 0.5), ("REFUTES", 1.0), ("NEUTRAL", 0.8)]) == pytest.approx(1.5 / 3.5)


def test_distance_is_the_mean_gap_and_the_share_on_the_gold_side() -> None:
    gold = {"a": 0.7, "b": 0.5, "c": 0.2}
    d = distance({"a": 0.5, "b": 0.5, "c": 0.4}, gold)
    assert d.mean_abs == pytest.approx((0.2 + 0.0 + 0.2) / 3)
    assert d.right_side == pytest.approx(2 / 3)  # a sits at 0.5 (no side), b and c agree
    assert [side(0.5), side(0.51), side(0.49)] == [0, 1, -1]
    with pytest.raises(ValueError, match="no confidence"):
        distance({"a": 0.5}, gold)


def test_without_mistakes_and_with_every_pair_judged_the_distance_reaches_zero() -> None:
    gold = gold_pairs(12, 3)
    gold_conf = gold_confidences(gold, 0.9)
    keys = {pair: f"p{i}" for i, pair in enumerate(sorted(gold))}
    assistant = SimulatedAssistant({keys[p]: r for p, r in gold.items()}, 0.0, 0.9, seed=4)
    # the offline judge's edges: every pair wrong, with varied weights
    edges = {p: (RELATIONS[(RELATIONS.index(r) + 1) % 3], 0.3 + 0.05 * i) for i, (p, r) in enumerate(gold.items())}
    start = distance(confidences(edges), gold_conf)
    assert start.mean_abs > 0.05
    seen = []
    for pair in sorted(gold):
        answer = assistant.verdict("jtk_x", keys[pair])
        edges[pair] = (answer.relation, answer.confidence)
        seen.append(distance(confidences(edges), gold_conf).mean_abs)
    assert seen[-1] == pytest.approx(0.0, abs=1e-12)
    assert distance(confidences(edges), gold_conf).right_side == 1.0
    assert assistant.mistakes == 0


def test_with_mistakes_the_full_budget_stays_away_from_gold() -> None:
    gold = gold_pairs(30, 2)
    keys = {pair: f"p{i}" for i, pair in enumerate(sorted(gold))}
    assistant = SimulatedAssistant({keys[p]: r for p, r in gold.items()}, 0.5, 0.9, seed=1)
    edges = {p: (assistant.verdict("t", keys[p]).relation, 0.9) for p in gold}
    assert assistant.mistakes > 0
    assert distance(confidences(edges), gold_confidences(gold, 0.9)).mean_abs > 0.0


def test_the_simulated_assistant_errs_at_its_rate_and_the_same_way_for_the_same_seed() -> None:
    gold = {f"p{i:04d}": RELATIONS[i % 3] for i in range(2000)}
    a = SimulatedAssistant(gold, 0.25, 0.9, seed=7)
    assert 0.22 < a.mistakes / len(gold) < 0.28
    assert SimulatedAssistant(gold, 0.25, 0.9, seed=7).answers == a.answers
    assert SimulatedAssistant(gold, 0.25, 0.9, seed=8).answers != a.answers
    wrong = SimulatedAssistant(gold, 1.0, 0.9, seed=7)
    assert wrong.mistakes == len(gold) and all(wrong.answers[k] in RELATIONS for k in gold)
    verdict = a.verdict("jtk_1", "p0001")
    assert (verdict.ticket, verdict.confidence) == ("jtk_1", 0.9)
    with pytest.raises(ValueError, match="flip rate"):
        SimulatedAssistant(gold, 1.5, 0.9, seed=0)


def pair(pid: str, claim: str, passage: str, relation: str) -> LabelledPair:
    return LabelledPair(pid, claim, passage, "", relation)


def test_one_label_per_pair_keeps_the_decisive_label_and_drops_contradictions() -> None:
    pairs = [
        pair("1", "c1", "abs", "REFUTES"),
        pair("2", "c1", "abs", "NEUTRAL"),
        pair("3", "c2", "abs", "SUPPORTS"),
        pair("4", "c2", "abs", "REFUTES"),
        pair("5", "c3", "other", "NEUTRAL"),
    ]
    kept = {p.pair_id: p.relation for p in one_label_per_pair(pairs)}
    assert kept == {"1": "REFUTES", "5": "NEUTRAL"}
    chosen = choose_claims(pairs, 1, seed=0)
    assert len({p.claim for p in chosen}) == 1


def test_read_pairs_maps_the_labels_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    rows = [
        {"pair_id": "a", "claim": "C", "evidence_text": "E", "evidence_title": "T", "label": "CONTRADICT"},
        {"pair_id": "b", "claim": "C", "evidence_text": "F", "label": "NEI"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    assert [(p.pair_id, p.relation) for p in read_pairs(path)] == [("a", "REFUTES"), ("b", "NEUTRAL")]
    path.write_text(json.dumps({**rows[0], "label": "MAYBE"}) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="MAYBE"):
        read_pairs(path)


def test_the_tables_average_over_seeds() -> None:
    points = [
        CurvePoint(policy="impact", flip_rate=0.1, seed=s, budget=b, mean_abs=m, right_side=r)
        for s, b, m, r in [(0, 0, 0.2, 0.5), (1, 0, 0.2, 0.5), (0, 5, 0.1, 0.6), (1, 5, 0.3, 0.8)]
    ]
    rows = summarise(points)
    assert [(r["budget"], round(r["mean_abs"], 6), round(r["right_side"], 6), r["runs"]) for r in rows] == [
        (0, 0.2, 0.5, 2),
        (5, 0.2, 0.7, 2),
    ]
    result = JudgeQueueResult(
        data="d.jsonl",
        claims=2,
        pairs=2,
        gold_counts={"SUPPORTS": 1, "REFUTES": 1, "NEUTRAL": 0},
        offline_judge="offline:x",
        offline_accuracy=0.5,
        offline_counts={"SUPPORTS": 1, "REFUTES": 0, "NEUTRAL": 1},
        assistant_confidence=0.9,
        batch=5,
        seeds=[0, 1],
        flip_rates=[0.1],
        points=points,
        flagged_items=0,
        seconds_offline_judge=1.0,
        seconds_total=2.0,
        date="2026-01-01 00:00 UTC",
        machine="m",
    )
    table = to_markdown(result)
    assert "| 5 | 0.200 (70%) |" in table and "| N | impact |" in table


def test_the_docs_block_is_replaced_between_its_markers_only() -> None:
    page = f"# Title\n\nbefore\n{BLOCK_BEGIN}\nold table\n{BLOCK_END}\nafter\n"
    new = replace_block(page, "| N | impact |\n")
    assert new == f"# Title\n\nbefore\n{BLOCK_BEGIN}\n| N | impact |\n{BLOCK_END}\nafter\n"
    assert replace_block(new, "| N | impact |") == new
    with pytest.raises(InvalidInputError, match="block"):
        replace_block("# no markers\n", "x")


def test_sentence_pairs_label_the_rationale_sentences_and_leave_the_rest_neutral(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    sentences = ["Background.", "Masks cut transmission by half.", "", "Funding: none."]
    rows = [
        {
            "pair_id": "a",
            "claim": "Masks work.",
            "evidence_text": "ABS",
            "evidence_sentences": sentences,
            "rationale_idx": [1],
            "label": "SUPPORT",
        },
        {
            "pair_id": "b",
            "claim": "Masks work.",
            "evidence_text": "ABS",
            "evidence_sentences": sentences,
            "rationale_idx": [3],
            "label": "NEI",
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    got = [(p.pair_id, p.passage, p.relation) for p in read_sentence_pairs(path)]
    assert got == [
        ("a#s0", "Background.", "NEUTRAL"),
        ("a#s1", "Masks cut transmission by half.", "SUPPORTS"),
        ("a#s3", "Funding: none.", "NEUTRAL"),
    ]
    page = f"x\n{markers('judge-queue-sentence')[0]}\nold\n{markers('judge-queue-sentence')[1]}\n{BLOCK_BEGIN}\nkeep\n"
    new = replace_block(page + f"{BLOCK_END}\n", "new", block_name("sentence"))
    assert "\nnew\n" in new and "keep" in new and "old" not in new
