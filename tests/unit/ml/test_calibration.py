"""Calibration of the stance judge's confidence: scores on hand-worked examples, fits on synthetic judges, splits."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable
from typing import Literal

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from lyra.ml.calibration import (
    MIN_FIT_SAMPLES,
    CalibrationReport,
    Calibrator,
    Sample,
    evaluate,
    fit_and_check,
    fit_calibrator,
    split_holdout,
)


def right(confidence: float) -> Sample:
    return Sample("supports", confidence, "supports")


def wrong(confidence: float) -> Sample:
    return Sample("supports", confidence, "refutes")


def synthetic_judge(
    n: int, accuracy_at: Callable[[np.ndarray], np.ndarray], low: float = 0.0, high: float = 1.0, seed: int = 0
) -> list[Sample]:
    """Confidences drawn uniformly from [low, high]; each prediction is right with probability accuracy_at(p)."""
    rng = np.random.default_rng(seed)
    confidence = rng.uniform(low, high, n)
    is_right = rng.random(n) < accuracy_at(confidence)
    return [right(float(p)) if ok else wrong(float(p)) for p, ok in zip(confidence, is_right, strict=True)]


# Four reviews worked by hand below: 0.95 right, 0.85 wrong, 0.65 right, 0.35 wrong.
HAND = [right(0.95), wrong(0.85), right(0.65), wrong(0.35)]


# --- what is measured -------------------------------------------------------------------------------------------


def test_a_sample_is_correct_when_the_predicted_label_matches_the_reviewers() -> None:
    assert Sample("refutes", 0.7, "refutes").correct
    assert not Sample("refutes", 0.7, "neutral").correct


def test_accuracy_and_brier_match_a_hand_computed_example() -> None:
    report = evaluate(HAND)
    assert report.samples == 4
    assert report.accuracy == pytest.approx(2 / 4)
    # (0.95-1)² + (0.85-0)² + (0.65-1)² + (0.35-0)² = 0.0025 + 0.7225 + 0.1225 + 0.1225 = 0.97
    assert report.brier == pytest.approx(0.97 / 4)


def test_ece_and_mce_with_one_sample_per_bin_are_the_mean_and_largest_gap() -> None:
    report = evaluate(HAND, n_bins=10)
    # Each sample sits alone in its bin, so the gaps are |p - y|: 0.05, 0.85, 0.35, 0.35.
    assert report.ece == pytest.approx((0.05 + 0.85 + 0.35 + 0.35) / 4)
    assert report.mce == pytest.approx(0.85)
    assert [b.count for b in report.bins] == [0, 0, 0, 1, 0, 0, 1, 0, 1, 1]


def test_ece_weights_each_bins_gap_by_its_share_of_samples() -> None:
    report = evaluate(HAND, n_bins=2)
    # [0, 0.5): only 0.35 (wrong) -> gap 0.35.  [0.5, 1]: 0.95, 0.85, 0.65 -> mean confidence 2.45/3,
    # accuracy 2/3, gap 0.15.  ECE = 1/4 * 0.35 + 3/4 * 0.15 = 0.2.
    low, high = report.bins
    assert low.count == 1 and low.mean_confidence == pytest.approx(0.35) and low.accuracy == 0.0
    assert high.count == 3
    assert high.mean_confidence == pytest.approx(2.45 / 3) and high.accuracy == pytest.approx(2 / 3)
    assert report.ece == pytest.approx(0.2)
    assert report.mce == pytest.approx(0.35)


def test_empty_bins_report_no_means() -> None:
    report = evaluate([right(0.55)], n_bins=4)
    assert [b.count for b in report.bins] == [0, 0, 1, 0]
    assert report.bins[0].mean_confidence is None and report.bins[0].accuracy is None


def test_bins_tile_zero_to_one_without_gaps() -> None:
    report = evaluate(HAND, n_bins=7)
    assert len(report.bins) == 7
    assert report.bins[0].lower == 0.0
    assert report.bins[-1].upper == pytest.approx(1.0)
    for previous, following in itertools.pairwise(report.bins):
        assert previous.upper == pytest.approx(following.lower)
    assert sum(b.count for b in report.bins) == len(HAND)


def test_confidence_one_lands_in_the_last_bin_and_zero_in_the_first() -> None:
    report = evaluate([right(1.0), wrong(0.0)], n_bins=10)
    assert report.bins[-1].count == 1 and report.bins[-1].mean_confidence == 1.0
    assert report.bins[0].count == 1 and report.bins[0].mean_confidence == 0.0
    assert report.ece == 0.0 and report.brier == 0.0


def test_evaluate_maps_confidences_through_a_given_calibrator() -> None:
    # sigmoid(logit(0.5) + ln 3) = 3/4, so a right answer at 0.5 scores (0.75 - 1)² = 0.0625.
    shift = Calibrator(method="platt", a=1.0, b=math.log(3.0))
    report = evaluate([right(0.5)], calibrator=shift)
    assert report.brier == pytest.approx(0.0625)
    assert report.bins[7].count == 1
    assert evaluate([right(0.5)]).brier == pytest.approx(0.25)


def test_a_perfectly_calibrated_judge_has_a_small_ece() -> None:
    report = evaluate(synthetic_judge(20_000, lambda p: p, seed=1))
    assert report.ece < 0.02
    assert report.accuracy == pytest.approx(0.5, abs=0.02)


def test_an_over_confident_judge_has_a_large_ece() -> None:
    # Accuracy p² on p ~ U[0.5, 1]: the expected gap is E[p - p²] = 1/6.
    report = evaluate(synthetic_judge(20_000, lambda p: p**2, low=0.5, seed=2))
    assert report.ece == pytest.approx(1 / 6, abs=0.02)


@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.booleans()), min_size=1, max_size=60), st.integers(1, 20))
def test_scores_stay_between_zero_and_one_and_mce_bounds_ece(pairs: list[tuple[float, bool]], n_bins: int) -> None:
    report = evaluate([right(p) if ok else wrong(p) for p, ok in pairs], n_bins=n_bins)
    assert 0.0 <= report.ece <= report.mce + 1e-12 <= 1.0 + 1e-12
    assert 0.0 <= report.brier <= 1.0
    assert sum(b.count for b in report.bins) == len(pairs)


def test_evaluate_refuses_an_empty_sample_list() -> None:
    with pytest.raises(ValueError, match="no samples"):
        evaluate([])


@pytest.mark.parametrize("confidence", [-0.1, 1.2, math.nan])
def test_evaluate_refuses_a_confidence_outside_zero_to_one(confidence: float) -> None:
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        evaluate([right(0.5), right(confidence)])


# --- the calibrator ---------------------------------------------------------------------------------------------


def test_apply_matches_hand_computed_values() -> None:
    # Temperature 2 on 0.8: logit 0.8 = ln 4, halved is ln 2, sigmoid(ln 2) = 2/3.
    assert Calibrator(method="temperature", a=0.5, b=0.0).apply(0.8) == pytest.approx(2 / 3)
    assert Calibrator(method="platt", a=1.0, b=math.log(3.0)).apply(0.5) == pytest.approx(0.75)
    assert Calibrator.identity().apply(0.3) == pytest.approx(0.3)


def test_apply_keeps_zero_and_one_strictly_inside_the_unit_interval() -> None:
    for calibrator in (Calibrator.identity(), Calibrator(method="platt", a=50.0, b=5.0)):
        low, high = calibrator.apply_many([0.0, 1.0])
        assert 0.0 < low < high < 1.0


def test_apply_refuses_a_confidence_outside_zero_to_one() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        Calibrator.identity().apply(1.5)


@given(
    st.floats(0.01, 30.0),
    st.floats(-15.0, 15.0),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
)
def test_apply_is_monotonic_and_inside_the_unit_interval_for_any_positive_slope(
    a: float, b: float, p: float, q: float
) -> None:
    calibrator = Calibrator(method="platt", a=a, b=b)
    low, high = calibrator.apply_many(sorted([p, q]))
    assert 0.0 < low <= high < 1.0
    assert calibrator.apply(p) == calibrator.apply_many([p])[0]


def test_a_calibrator_cannot_invert_confidences_and_temperature_has_no_bias() -> None:
    with pytest.raises(ValidationError):
        Calibrator(method="platt", a=-1.0, b=0.0)
    with pytest.raises(ValidationError, match="no bias"):
        Calibrator(method="temperature", a=1.0, b=0.3)


# --- fitting ----------------------------------------------------------------------------------------------------


def test_platt_on_an_over_confident_judge_clearly_lowers_held_out_ece() -> None:
    result = fit_and_check(synthetic_judge(4_000, lambda p: p**2, low=0.5, seed=3), method="platt")
    assert result.improves
    assert result.after.ece < 0.5 * result.before.ece
    assert result.before.ece > 0.12
    assert result.train_samples + result.holdout_samples == 4_000
    assert result.before.samples == result.after.samples == result.holdout_samples
    # Calibration only moves confidences; the held-out accuracy is the same before and after.
    assert result.after.accuracy == result.before.accuracy


def test_temperature_scaling_learns_a_temperature_above_one_for_an_over_confident_judge() -> None:
    calibrator = fit_calibrator(synthetic_judge(4_000, lambda p: p**2, low=0.5, seed=4), method="temperature")
    assert calibrator.method == "temperature" and calibrator.b == 0.0
    assert calibrator.temperature > 1.5


def test_temperature_scaling_learns_a_temperature_below_one_for_an_under_confident_judge() -> None:
    calibrator = fit_calibrator(synthetic_judge(4_000, np.sqrt, low=0.5, seed=5), method="temperature")
    assert calibrator.temperature < 1.0


@pytest.mark.parametrize("method", ["platt", "temperature"])
def test_a_fitted_calibrator_is_monotonic(method: Literal["platt", "temperature"]) -> None:
    samples = synthetic_judge(1_000, lambda p: p**2, low=0.4, seed=6)
    calibrator = fit_calibrator(samples, method=method)
    mapped = calibrator.apply_many(list(np.linspace(0.0, 1.0, 201)))
    assert all(x <= y for x, y in itertools.pairwise(mapped))
    assert mapped[0] < mapped[-1]


def test_fitting_an_already_calibrated_judge_gives_nearly_the_identity() -> None:
    calibrator = fit_calibrator(synthetic_judge(20_000, lambda p: p, seed=7))
    assert calibrator.a == pytest.approx(1.0, abs=0.1)
    assert calibrator.b == pytest.approx(0.0, abs=0.1)
    for p in (0.1, 0.3, 0.5, 0.7, 0.9):
        assert calibrator.apply(p) == pytest.approx(p, abs=0.03)


def test_fitting_is_deterministic() -> None:
    samples = synthetic_judge(500, lambda p: p**2, low=0.5, seed=8)
    assert fit_calibrator(samples) == fit_calibrator(list(samples))


def test_confidences_that_separate_right_from_wrong_still_give_a_finite_fit() -> None:
    calibrator = fit_calibrator([right(0.9)] * 10 + [wrong(0.2)] * 10)
    assert math.isfinite(calibrator.a) and calibrator.a > 1.0
    assert calibrator.apply(0.9) > 0.9 > 0.1 > calibrator.apply(0.2)


def test_fitting_refuses_too_few_samples() -> None:
    few = [right(0.8), wrong(0.6)] * (MIN_FIT_SAMPLES // 2) + [right(0.7)]
    with pytest.raises(ValueError, match=f"at least {MIN_FIT_SAMPLES}"):
        fit_calibrator(few[: MIN_FIT_SAMPLES - 1])
    assert fit_calibrator(few[:MIN_FIT_SAMPLES]).a > 0


def test_fitting_refuses_samples_that_are_all_correct() -> None:
    with pytest.raises(ValueError, match="all 12 samples are correct"):
        fit_calibrator([right(0.5 + i / 30) for i in range(12)])


def test_fitting_refuses_samples_that_are_all_wrong() -> None:
    with pytest.raises(ValueError, match="all 12 samples are wrong"):
        fit_calibrator([wrong(0.5 + i / 30) for i in range(12)])


def test_fitting_refuses_a_judge_whose_confidence_is_inverted() -> None:
    with pytest.raises(ValueError, match="not positive"):
        fit_calibrator([right(0.1)] * 10 + [wrong(0.9)] * 10)


def test_fitting_refuses_an_out_of_range_confidence() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        fit_calibrator([right(0.7), wrong(0.4)] * 6 + [right(1.01)])


# --- the held-out split -----------------------------------------------------------------------------------------


def test_split_is_deterministic_and_independent_of_order() -> None:
    samples = synthetic_judge(1_000, lambda p: p, seed=9)
    train, holdout = split_holdout(samples)
    again_train, again_holdout = split_holdout(samples)
    assert (train, holdout) == (again_train, again_holdout)
    shuffled = list(samples)
    random.Random(0).shuffle(shuffled)
    shuffled_train, shuffled_holdout = split_holdout(shuffled)
    assert set(shuffled_train) == set(train) and set(shuffled_holdout) == set(holdout)


def test_split_keeps_every_sample_exactly_once_and_roughly_honours_the_fraction() -> None:
    samples = synthetic_judge(4_000, lambda p: p, seed=10)
    train, holdout = split_holdout(samples, holdout_fraction=0.25)
    assert len(train) + len(holdout) == len(samples)
    assert set(train).isdisjoint(holdout)
    assert len(holdout) / len(samples) == pytest.approx(0.25, abs=0.03)


def test_split_uses_a_supplied_key_so_repeated_reviews_can_be_told_apart() -> None:
    edge_of = {i / 10_000: f"edge-{i}" for i in range(2_000)}
    samples = [right(confidence) for confidence in edge_of]
    train, holdout = split_holdout(samples, holdout_fraction=0.3, key=lambda s: edge_of[s.predicted_confidence])
    assert len(holdout) / len(samples) == pytest.approx(0.3, abs=0.04)
    assert split_holdout(samples, 0.3, key=lambda s: edge_of[s.predicted_confidence]) == (train, holdout)
    # Under the default key identical reviews share one hash, so they all land on the same side.
    same_train, same_holdout = split_holdout([right(0.8)] * 50)
    assert sorted([len(same_train), len(same_holdout)]) == [0, 50]


def test_split_refuses_a_fraction_outside_zero_to_one() -> None:
    with pytest.raises(ValueError, match="holdout_fraction"):
        split_holdout(HAND, holdout_fraction=1.0)


def test_fit_and_check_refuses_an_empty_held_out_part() -> None:
    samples = [right(0.8), wrong(0.3)] * 5 + [right(0.6), wrong(0.55)] * 5
    with pytest.raises(ValueError, match="held-out part is empty"):
        fit_and_check(samples, holdout_fraction=1e-9)


def test_fit_and_check_counts_every_sample_given_when_there_are_too_few() -> None:
    # five reviewed samples were refused with "got 3", the size of the training part after the split
    five = [right(0.9), wrong(0.4), right(0.8), wrong(0.3), right(0.7)]
    with pytest.raises(ValueError, match=f"need at least {MIN_FIT_SAMPLES} reviewed samples .*, got 5$"):
        fit_and_check(five)


def test_fit_and_check_says_how_many_samples_the_holdout_leaves_to_fit_on() -> None:
    samples = [Sample("supports", 0.3 + i / 40, "supports" if i % 3 else "refutes") for i in range(MIN_FIT_SAMPLES)]
    train, holdout = split_holdout(samples)
    assert holdout and len(train) < MIN_FIT_SAMPLES  # enough in all, too few once some are held out
    with pytest.raises(ValueError, match="held out to check the fit") as info:
        fit_and_check(samples)
    message = str(info.value)
    assert f"of the {len(samples)} reviewed samples, {len(holdout)} are held out" in message
    assert f"leaves {len(train)} to fit on; the fit needs at least {MIN_FIT_SAMPLES}" in message


def test_reports_round_trip_through_json() -> None:
    report = evaluate(HAND)
    assert CalibrationReport.model_validate_json(report.model_dump_json()) == report
