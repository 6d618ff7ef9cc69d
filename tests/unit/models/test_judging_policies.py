"""The judging queues' ordering math: impact, the uncertain margin, the review priority, the policies'
choice and order of edges, and the per-item checks of submit_judgments."""

from __future__ import annotations

import math
from typing import Any

import pytest

from lyra.models.judging import posterior_mean, review_priority, uncertainty_margin, verdict_impact
from lyra.services.judging import check_item, rank_candidates


def row(edge_id: str, relation: str, weight: float, **extra: Any) -> dict[str, Any]:
    base = {
        "edge_id": edge_id,
        "claim_id": extra.pop("claim_id", "c1"),
        "fragment_id": f"f_{edge_id}",
        "relation": relation,
        "weight": weight,
        "offline_confidence": weight,
        "judge": "offline:x",
        "judge_rank": 0,
        "offline_relation": None,
        "flagged": False,
        "ticketed": False,
    }
    return {**base, **extra}


def test_impact_is_the_largest_move_of_the_posterior_mean() -> None:
    # a SUPPORTS edge of weight 0.8 on Beta(1.8, 1): flipping it to REFUTES with weight 1 moves the mean most
    alpha, beta = 1.8, 1.0
    expected = abs(posterior_mean(1.0, 2.0) - posterior_mean(alpha, beta))
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


def test_impact_orders_by_the_move_and_disputed_takes_other_assistants_disagreements() -> None:
    scores = {"c1": (1.0 + 0.9, 1.0), "c2": (1.0 + 0.9 + 8.0, 1.0)}
    rows = [
        row("e1", "SUPPORTS", 0.9, claim_id="c1"),
        row("e2", "SUPPORTS", 0.9, claim_id="c2"),
        row("e3", "NEUTRAL", 0.0, claim_id="c1"),
    ]
    ranked = rank_candidates(rows, "impact", "assistant:me", scores)
    assert ranked[0]["edge_id"] == "e1"  # the same edge weighs more on the claim with less evidence
    assert ranked[0]["score"] >= ranked[1]["score"] >= ranked[2]["score"]
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
