"""The judging queues' ordering math: impact (the expected move), the review queue's largest move, the uncertain
margin, the review priority, the policies' choice and order of edges, and the per-item checks of submit_judgments."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

from lyra.models.confidence import posterior_confidence
from lyra.models.judging import (
    expected_impact,
    label_probabilities,
    review_priority,
    uncertainty_margin,
    verdict_impact,
)
from lyra.services.judging import check_item, rank_candidates


def row(edge_id: str, relation: str, weight: float, **extra: Any) -> dict[str, Any]:
    base = {
        "edge_id": edge_id,
        "claim_id": extra.pop("claim_id", "c1"),
        "fragment_id": f"f_{edge_id}",
        "relation": relation,
        "weight": weight,
        "offline_confidence": weight,
        "label_probability": weight,
        "retracted": False,
        "judge": "offline:x",
        "judge_rank": 0,
        "offline_relation": None,
        "flagged": False,
        "ticketed": False,
    }
    return {**base, **extra}


def test_impact_is_the_largest_move_of_the_posterior_confidence() -> None:
    # a SUPPORTS edge of weight 0.8 on Beta(1.8, 1): flipping it to REFUTES with weight 1 moves the mean most
    alpha, beta = 1.8, 1.0
    expected = abs(posterior_confidence(1.0, 2.0) - posterior_confidence(alpha, beta))
    assert verdict_impact("SUPPORTS", 0.8, alpha, beta) == pytest.approx(expected)
    # a NEUTRAL edge: max(alpha, beta) / ((alpha + beta) (alpha + beta + 1))
    assert verdict_impact("NEUTRAL", 0.0, 3.0, 2.0) == pytest.approx(3.0 / (5.0 * 6.0))


def test_impact_is_larger_for_heavier_edges_and_unsettled_claims() -> None:
    assert verdict_impact("SUPPORTS", 0.9, 1.9, 1.0) > verdict_impact("SUPPORTS", 0.2, 1.2, 1.0)
    # the same edge on a claim with much one-sided evidence moves it less than on a claim with little evidence
    assert verdict_impact("SUPPORTS", 0.5, 20.5, 1.0) < verdict_impact("SUPPORTS", 0.5, 1.5, 1.0)
    # the more evidence a claim holds (alpha + beta), the less one verdict moves it
    assert verdict_impact("REFUTES", 0.5, 1.5, 1.5) > verdict_impact("REFUTES", 0.5, 6.0, 6.0)
    for relation in ("SUPPORTS", "REFUTES", "NEUTRAL"):
        for weight in (0.0, 0.3, 1.0):
            value = verdict_impact(relation, weight if relation != "NEUTRAL" else 0.0, 1.0 + weight, 1.0 + weight)
            assert 0.0 <= value <= 1.0 and math.isfinite(value)


def test_expected_impact_matches_a_hand_computation() -> None:
    # REFUTES at weight 1/2 with probability 1/2 on Beta(2, 3/2): without it the claim is Beta(2, 1), now 4/7
    # SUPPORTS (P 1/4): Beta(3, 1) = 3/4, moves 5/28; REFUTES (P 1/2): Beta(2, 2) = 1/2, moves 1/14;
    # NEUTRAL (P 1/4): Beta(2, 1) = 2/3, moves 2/21
    hand = Fraction(1, 4) * Fraction(5, 28) + Fraction(1, 2) * Fraction(1, 14) + Fraction(1, 4) * Fraction(2, 21)
    assert expected_impact("REFUTES", 0.5, 0.5, 2.0, 1.5) == pytest.approx(float(hand))
    # with a re-judge weight w, a NEUTRAL edge on the prior moves it by (1 + w) / (2 + w) - 1/2 either way
    w = 0.9
    move = (1.0 + w) / (2.0 + w) - 0.5
    assert expected_impact("NEUTRAL", 0.7, 0.7, 1.0, 1.0, rejudge_weight=w) == pytest.approx(0.3 * move)


def test_the_offline_label_probabilities() -> None:
    probs = label_probabilities("SUPPORTS", 0.7)
    assert probs == pytest.approx({"SUPPORTS": 0.7, "REFUTES": 0.15, "NEUTRAL": 0.15})
    assert sum(label_probabilities("NEUTRAL", 1.4).values()) == pytest.approx(1.0)  # clamped to 0..1
    assert label_probabilities("NEUTRAL", 1.4)["NEUTRAL"] == 1.0
    assert label_probabilities(None, 0.9) == pytest.approx(
        {label: 1 / 3 for label in ("SUPPORTS", "REFUTES", "NEUTRAL")}
    )
    assert label_probabilities("REFUTES", None)["REFUTES"] == pytest.approx(1 / 3)


def test_a_sure_verdict_on_a_settled_claim_scores_about_nothing() -> None:
    settled = expected_impact("SUPPORTS", 0.99, 0.99, 1.0 + 0.99 + 30.0, 1.0)
    assert 0.0 <= settled < 1e-3
    # an unsure weighty verdict on an open claim (nothing else on it) scores far higher
    open_unsure = expected_impact("SUPPORTS", 0.6, 0.6, 1.6, 1.0)
    assert open_unsure > 0.1 and open_unsure > 100 * settled
    # the same unsure verdict on a claim with much evidence both ways moves it less
    assert expected_impact("SUPPORTS", 0.6, 0.6, 10.6, 10.0) < open_unsure / 3
    # unlike the largest move, a sure decisive verdict on an open claim is not put first
    assert expected_impact("SUPPORTS", 0.98, 0.98, 1.98, 1.0) < open_unsure / 3
    assert verdict_impact("SUPPORTS", 0.98, 1.98, 1.0) > verdict_impact("SUPPORTS", 0.6, 1.6, 1.0)
    # a retracted edge (its re-judged verdict weighs nothing, nor does it now) scores 0
    assert expected_impact("SUPPORTS", 0.0, 0.6, 1.0, 1.0, rejudge_weight=0.0) == 0.0


def test_the_uncertain_margin_and_the_review_priority() -> None:
    assert uncertainty_margin(None) == 0.0 and uncertainty_margin(0.42) == 0.42
    assert review_priority(0.1, disputed=True, flagged=False) == pytest.approx(0.2)
    assert review_priority(0.1, disputed=True, flagged=True) == pytest.approx(0.4)
    assert review_priority(0.1, disputed=False, flagged=False) == pytest.approx(0.1)


def test_uncertain_takes_offline_edges_least_sure_first_and_skips_ticketed_ones() -> None:
    rows = [
        row("e1", "SUPPORTS", 0.9),
        row("e2", "REFUTES", 0.3),
        row("e3", "SUPPORTS", 0.5, ticketed=True),
        row("e4", "SUPPORTS", 0.1, judge_rank=1, judge="assistant:a"),
        row("e5", "NEUTRAL", 0.3),
    ]
    ranked = rank_candidates(rows, "uncertain", "assistant:me", {})
    assert [r["edge_id"] for r in ranked] == ["e2", "e5", "e1"]


def test_impact_orders_by_the_expected_move_and_disputed_takes_other_assistants_disagreements() -> None:
    scores = {"c1": (1.0 + 0.55, 1.0), "c2": (1.0 + 0.55 + 8.0, 1.0), "c3": (1.0, 1.0 + 0.98), "c4": (1.0, 1.0)}
    rows = [
        row("e1", "SUPPORTS", 0.55, claim_id="c1"),  # unsure, on a claim with nothing else
        row("e2", "SUPPORTS", 0.55, claim_id="c2"),  # the same verdict on a claim with much other evidence
        row("e3", "REFUTES", 0.98, claim_id="c3"),  # sure and decisive: the re-judge would almost surely repeat it
        # retracted: weighs 0 in its claim now and after any re-judging
        row("e4", "SUPPORTS", 0.0, claim_id="c4", retracted=True, label_probability=0.6),
    ]
    ranked = rank_candidates(rows, "impact", "assistant:me", scores)
    assert [r["edge_id"] for r in ranked] == ["e1", "e2", "e3", "e4"]
    assert ranked[-1]["score"] == pytest.approx(0.0)
    for r in ranked:
        alpha, beta = scores[r["claim_id"]]
        rejudge = 0.0 if r["retracted"] else 1.0
        assert r["score"] == pytest.approx(
            expected_impact(r["relation"], r["weight"], r["label_probability"], alpha, beta, rejudge)
        )
    disputed_rows = [
        row("d1", "REFUTES", 0.8, judge_rank=1, judge="assistant:other", offline_relation="SUPPORTS"),
        row("d2", "REFUTES", 0.8, judge_rank=1, judge="assistant:me", offline_relation="SUPPORTS"),
        row("d3", "SUPPORTS", 0.8, judge_rank=1, judge="assistant:other", offline_relation="SUPPORTS"),
        row("d4", "SUPPORTS", 0.8, judge_rank=0, offline_relation=None),
    ]
    assert [r["edge_id"] for r in rank_candidates(disputed_rows, "disputed", "assistant:me", {})] == ["d1"]


def test_an_items_fields_are_checked_one_by_one() -> None:
    assert check_item(0, "supports", 0.5, None) == ("SUPPORTS", [])
    label, errors = check_item(3, "MAYBE", float("nan"), "x" * 501)
    assert label is None and [(e.index, e.field) for e in errors] == [
        (3, "relation"),
        (3, "confidence"),
        (3, "rationale"),
    ]
    assert check_item(0, "REFUTES", 1.0, "x" * 500)[1] == []
    assert [e.field for e in check_item(0, "NEUTRAL", -0.01, None)[1]] == ["confidence"]
