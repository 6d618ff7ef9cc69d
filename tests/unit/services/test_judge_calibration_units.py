"""Per-judge measurement (lyra.services.judge_calibration), the offline-only confidence of get_materials
(lyra.services.materials.judge_rows) and the report's judges block: pure functions over rows shaped as the Cypher
answers them (no Neo4j; tests/integration/evidence/test_judge_calibration.py runs the statements)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from lyra.models.api import EvidenceYears, MaterialClaim, Materials
from lyra.services.judge_calibration import measure_judge
from lyra.services.materials import judge_fields, judge_rows
from lyra.services.report import render_report


def rows(verdicts: list[tuple[str, float | None, str]]) -> list[dict[str, Any]]:
    return [
        {"relation": said, "confidence": conf, "human_relation": truth, "claim_id": "c", "fragment_id": f"f{i}"}
        for i, (said, conf, truth) in enumerate(verdicts)
    ]


def test_agreement_confusion_and_reliability_of_one_judge() -> None:
    got = measure_judge(
        "assistant:x/1",
        rows([("supports", 0.9, "supports"), ("supports", 0.8, "refutes"), ("neutral", 0.3, "neutral")]),
        bins=2,
        min_corrections=20,
    )
    assert (got.kind, got.samples, got.agreements) == ("assistant", 3, 2)
    assert got.agreement == pytest.approx(2 / 3)
    assert got.confusion["supports"] == {"supports": 1, "refutes": 1, "neutral": 0}
    assert got.confusion["neutral"]["neutral"] == 1 and got.confusion["refutes"] == dict.fromkeys(got.confusion, 0)
    low, high = got.reliability
    assert (low.count, low.mean_confidence, low.accuracy) == (1, pytest.approx(0.3), 1.0)
    assert (high.count, high.mean_confidence, high.accuracy) == (2, pytest.approx(0.85), 0.5)
    assert got.brier == pytest.approx((0.1**2 + 0.8**2 + 0.7**2) / 3)
    assert got.fit is None and got.fit_note is not None and "3 of the 20" in got.fit_note


def test_a_verdict_without_a_confidence_counts_for_agreement_but_not_for_reliability() -> None:
    got = measure_judge("offline:unknown", rows([("refutes", None, "refutes")]), bins=10, min_corrections=20)
    assert (got.kind, got.samples, got.agreements, got.brier, got.reliability) == ("offline", 1, 1, None, [])


def test_enough_corrections_fit_a_mapping_of_the_judges_confidence() -> None:
    # an over-confident judge: right 70% of the times it says 0.9, 40% of the times it says 0.6
    verdicts = [("supports", 0.9, "supports" if i % 10 < 7 else "refutes") for i in range(40)]
    verdicts += [("refutes", 0.6, "refutes" if i % 5 < 2 else "supports") for i in range(20)]
    got = measure_judge("assistant:x/1", rows(verdicts), bins=10, min_corrections=20)
    assert got.fit is not None and got.fit_note is None
    assert got.fit.method == "platt" and got.fit.train_samples + got.fit.holdout_samples == 60
    assert got.fit.a > 0 and got.fit.ece_after <= got.fit.ece_before + 1e-9
    # all right: nothing to learn from, said so
    same = measure_judge("assistant:x/1", rows([("supports", 0.9, "supports")] * 25), bins=10, min_corrections=20)
    assert same.fit is None and same.fit_note is not None and same.fit_note.startswith("no mapping fitted")


def test_offline_only_confidence_is_the_formula_over_the_offline_verdicts() -> None:
    result = [
        {
            "claims": [
                ["c1", [["offline:j", 2], ["human:ana", 1]], [["SUPPORTS", 0.8], ["REFUTES", 0.6], ["NEUTRAL", 0.9]]],
                ["c2", [], []],
            ]
        }
    ]
    one, two = judge_rows(result)
    assert one["judges"] == {"human:ana": 1, "offline:j": 2}
    assert one["offline_only_confidence"] == pytest.approx((1 + 0.8) / (1 + 0.8 + 1 + 0.6), abs=1e-15)
    assert two == {"claim_id": "c2", "judges": {}, "offline_only_confidence": 0.5}
    assert judge_fields(None) == {"judges": {}, "offline_only_confidence": 0.5}


def claim(**kw: Any) -> MaterialClaim:
    values: dict[str, Any] = {
        "claim_id": "c1", "text": "a claim", "confidence": 0.7, "uncertainty": 0.1, "controversy": 0.0,
        "alpha": 3.0, "beta": 1.0, "evidence_count": 2, "supports_count": 2, "refutes_count": 0,
        "neutral_count": 0, "claim_adoption_status": "adopted", "claim_rejection_reason": None,
        "credible_interval_95": (0.3, 0.9), "source_verification_status": "pending",
        "verification_reason": "insufficient_evidence", "independent_sources": 1, "evidence": [],
        "evidence_truncated": False, "evidence_years": EvidenceYears(oldest=None, newest=None),
    }  # fmt: skip
    values.update(kw)
    return MaterialClaim(**values)


def judges_block(c: MaterialClaim) -> str:
    page = Materials(task_id="t", hypothesis="h", status="active", claims=[c], computed_at="2025-01-01T00:00:00+00:00")
    html = render_report(page, [], generated_at="2025-01-01T00:00:00+00:00")
    found = re.search(r'<p class="judges".*?</p>', html, re.S)
    assert found is not None
    return found.group(0)


def test_the_report_shows_each_judges_edges_and_the_offline_only_confidence() -> None:
    block = judges_block(
        claim(judges={"offline:j": 3, "assistant:<b>evil</b>/1": 5}, confidence=0.7, offline_only_confidence=0.55)
    )
    names = re.findall(r'class="judge-name">(.*?)</span> <strong class="judge-edges">(\d+)</strong>', block)
    assert names == [("assistant:&lt;b&gt;evil&lt;/b&gt;/1", "5"), ("offline:j", "3")]  # most edges first, escaped
    assert 'data-offline-only="0.550"' in block and ">0.550</strong>" in block
    assert '<span class="judges-effect">+0.150</span>' in block
    lower = judges_block(claim(confidence=0.4, offline_only_confidence=0.6))
    assert '<span class="judges-effect">-0.200</span>' in lower and ">none<" in lower
