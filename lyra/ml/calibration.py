"""Calibration of the NLI stance judge's confidence, measured and corrected from human-reviewed edges.

The judge labels each (fragment, claim) pair ``supports`` / ``refutes`` / ``neutral`` and attaches a confidence
``p`` in [0, 1]. Read as a probability, ``p`` should be the chance that the predicted label is right. A reviewed
edge gives one :class:`Sample` ``(predicted_label, predicted_confidence, correct_label)``; its binary outcome is
``y = 1`` when the predicted label equals the reviewer's label and ``y = 0`` otherwise. Nothing here reads or
writes storage: the functions take samples and return numbers.

What is measured (:func:`evaluate`), over ``N`` samples with confidences ``p_i`` and outcomes ``y_i``:

* accuracy ``= (1/N) Σ y_i``;
* Brier score ``= (1/N) Σ (p_i - y_i)²`` (0 is perfect; always answering 0.5 scores 0.25);
* reliability bins: ``n_bins`` equal-width intervals ``[k/n_bins, (k+1)/n_bins)``, the last one closed so that a
  confidence of exactly 1.0 belongs to it. For a bin ``b`` with ``n_b`` samples, ``conf_b`` is their mean
  confidence and ``acc_b`` the fraction of them that are correct;
* ECE (expected calibration error) ``= Σ_b (n_b/N) · |acc_b - conf_b|``, a count-weighted mean gap;
* MCE (maximum calibration error) ``= max_b |acc_b - conf_b|`` over the non-empty bins.

How it is corrected (:func:`fit_calibrator`): with ``x = logit(clip(p, 1e-6, 1 - 1e-6))`` the calibrated
probability is ``q = sigmoid(a·x + b)``.

* Platt scaling fits both ``a`` and ``b``;
* temperature scaling fits only ``a = 1/T`` with ``b = 0``; ``T > 1`` softens an over-confident judge and
  ``T < 1`` sharpens an under-confident one.

The fit minimises the mean log loss ``(1/N) Σ [log(1 + e^{z_i}) - y_i·z_i]`` with ``z_i = a·x_i + b``, plus the
penalty ``l2·((a - 1)² + b²)``. The penalty pulls towards the identity map (``a = 1``, ``b = 0``), keeps the
optimum finite when confidences separate right from wrong perfectly, and makes the objective strictly convex, so
damped Newton steps (with a backtracking line search and a bounded number of iterations) reach the optimum
deterministically.

Why held-out (:func:`fit_and_check`): a calibrator scored on the samples it was fitted to looks better than it is,
most of all on the few hundred reviews a project typically has. The samples are therefore split by a hash of a
stable key (deterministic, so re-running gives the same split), the calibrator is fitted on the training part, and
ECE before and after is compared on the held-out part only.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator

FloatArray = npt.NDArray[np.float64]
Method = Literal["platt", "temperature"]

MIN_FIT_SAMPLES = 10
"""Fewer reviewed samples than this are refused by :func:`fit_calibrator`."""

CLIP = 1e-6
"""Confidences are clipped to ``[CLIP, 1 - CLIP]`` before the logit, so 0 and 1 map to finite values."""

_OUTPUT_CLIP = 1e-12
_MAX_NEWTON_ITERATIONS = 100
_TOLERANCE = 1e-10


@dataclass(frozen=True)
class Sample:
    """One human-reviewed stance edge: what the judge said, how sure it was, and what the reviewer said."""

    predicted_label: str
    predicted_confidence: float
    correct_label: str

    @property
    def correct(self) -> bool:
        """Whether the judge's label agrees with the reviewer's."""
        return self.predicted_label == self.correct_label


class ReliabilityBin(BaseModel):
    """One equal-width confidence interval of a reliability diagram; the means are ``None`` when it is empty."""

    lower: float
    upper: float
    count: int
    mean_confidence: float | None
    accuracy: float | None


class CalibrationReport(BaseModel):
    """Accuracy, Brier score, ECE, MCE and reliability bins of one set of samples (formulas in the module doc)."""

    samples: int
    accuracy: float
    brier: float
    ece: float
    mce: float
    bins: list[ReliabilityBin]


class Calibrator(BaseModel):
    """Maps a judge confidence ``p`` to ``sigmoid(a·logit(p) + b)``; temperature scaling stores ``a = 1/T, b = 0``.

    ``a`` must be positive, so the map is strictly increasing: it never reorders the judge's confidences.
    """

    model_config = ConfigDict(frozen=True)

    method: Method
    a: float = Field(gt=0)
    b: float

    @model_validator(mode="after")
    def _temperature_has_no_bias(self) -> Calibrator:
        if self.method == "temperature" and self.b != 0.0:
            raise ValueError(f"temperature scaling has no bias term, got b={self.b}")
        return self

    @property
    def temperature(self) -> float:
        """``T = 1/a`` (meaningful for temperature scaling; for Platt it is the inverse slope)."""
        return 1.0 / self.a

    @classmethod
    def identity(cls, method: Method = "platt") -> Calibrator:
        """The calibrator that leaves confidences (within the clipping) unchanged."""
        return cls(method=method, a=1.0, b=0.0)

    def apply(self, p: float) -> float:
        """The calibrated probability for one confidence, strictly inside (0, 1)."""
        return self.apply_many([p])[0]

    def apply_many(self, ps: Sequence[float]) -> list[float]:
        """The calibrated probabilities for several confidences, each strictly inside (0, 1)."""
        x = _logit(_as_array(ps, "confidence"))
        q = np.clip(_sigmoid(self.a * x + self.b), _OUTPUT_CLIP, 1.0 - _OUTPUT_CLIP)
        return [float(v) for v in q]


class FitResult(BaseModel):
    """A fitted calibrator and its held-out check: ``before``/``after`` are computed on the held-out samples only."""

    calibrator: Calibrator
    train_samples: int
    holdout_samples: int
    before: CalibrationReport
    after: CalibrationReport
    improves: bool


def evaluate(samples: Sequence[Sample], n_bins: int = 10, calibrator: Calibrator | None = None) -> CalibrationReport:
    """Accuracy, Brier, ECE, MCE and reliability bins; confidences go through ``calibrator`` first when given."""
    if n_bins < 1:
        raise ValueError(f"n_bins must be at least 1, got {n_bins}")
    confidence, outcome = _arrays(samples)
    if calibrator is not None:
        confidence = np.asarray(calibrator.apply_many(confidence.tolist()), dtype=np.float64)
    n = len(confidence)
    index = np.minimum(np.floor(confidence * n_bins).astype(np.int64), n_bins - 1)
    bins: list[ReliabilityBin] = []
    ece = 0.0
    mce = 0.0
    for k in range(n_bins):
        members = index == k
        count = int(members.sum())
        mean_confidence: float | None = None
        accuracy: float | None = None
        if count:
            mean_confidence = float(confidence[members].mean())
            accuracy = float(outcome[members].mean())
            gap = abs(accuracy - mean_confidence)
            ece += count / n * gap
            mce = max(mce, gap)
        bins.append(
            ReliabilityBin(
                lower=k / n_bins,
                upper=(k + 1) / n_bins,
                count=count,
                mean_confidence=mean_confidence,
                accuracy=accuracy,
            )
        )
    return CalibrationReport(
        samples=n,
        accuracy=float(outcome.mean()),
        brier=float(np.mean((confidence - outcome) ** 2)),
        ece=float(ece),
        mce=float(mce),
        bins=bins,
    )


def fit_calibrator(samples: Sequence[Sample], method: Method = "platt", l2: float = 1e-3) -> Calibrator:
    """Fit Platt or temperature scaling by penalised maximum likelihood on "the predicted label is correct".

    Raises ``ValueError`` for fewer than :data:`MIN_FIT_SAMPLES` samples, for samples that are all right or all
    wrong (nothing to learn from), for a negative ``l2``, and when the best fit would invert the confidences
    (slope ``a ≤ 0``: on these samples, higher confidence does not mean more often right).
    """
    if method not in ("platt", "temperature"):
        raise ValueError(f"unknown calibration method {method!r}; expected 'platt' or 'temperature'")
    if l2 < 0 or not math.isfinite(l2):
        raise ValueError(f"l2 must be a finite non-negative number, got {l2}")
    if len(samples) < MIN_FIT_SAMPLES:
        raise ValueError(f"need at least {MIN_FIT_SAMPLES} reviewed samples to fit a calibrator, got {len(samples)}")
    confidence, outcome = _arrays(samples)
    right = int(outcome.sum())
    if right == len(outcome):
        raise ValueError(f"all {right} samples are correct: there is no error to calibrate against")
    if right == 0:
        raise ValueError(f"all {len(outcome)} samples are wrong: there is no success to calibrate against")
    a, b = _newton(_logit(confidence), outcome, fit_bias=method == "platt", l2=l2)
    if not a > 0:
        raise ValueError(
            f"fitted slope a={a:.4g} is not positive: on these samples the judge's confidence does not rank "
            "correct predictions above wrong ones, so no increasing calibrator fits"
        )
    return Calibrator(method=method, a=a, b=b if method == "platt" else 0.0)


def split_holdout(
    samples: Sequence[Sample], holdout_fraction: float = 0.3, key: Callable[[Sample], str] | None = None
) -> tuple[list[Sample], list[Sample]]:
    """Split into ``(train, holdout)`` by a SHA-256 hash of ``key(sample)`` (default: ``repr(sample)``).

    A sample goes to the holdout when its hash, read as a fraction of 2⁶⁴, is below ``holdout_fraction``. The split
    depends only on the keys, so it is the same on every run and for every order of the input; samples with equal
    keys (e.g. identical reviews under the default key) land on the same side. Pass ``key`` (a review or edge id)
    when samples can repeat.
    """
    if not 0.0 < holdout_fraction < 1.0:
        raise ValueError(f"holdout_fraction must be strictly between 0 and 1, got {holdout_fraction}")
    key_of: Callable[[Sample], str] = repr if key is None else key
    train: list[Sample] = []
    holdout: list[Sample] = []
    for sample in samples:
        digest = hashlib.sha256(key_of(sample).encode("utf-8")).digest()
        position = int.from_bytes(digest[:8], "big") / 2.0**64
        (holdout if position < holdout_fraction else train).append(sample)
    return train, holdout


def fit_and_check(
    samples: Sequence[Sample],
    method: Method = "platt",
    holdout_fraction: float = 0.3,
    key: Callable[[Sample], str] | None = None,
    n_bins: int = 10,
) -> FitResult:
    """Fit on the training part of a deterministic split and compare ECE before/after on the held-out part.

    Raises ``ValueError`` for fewer than :data:`MIN_FIT_SAMPLES` samples in all, for an empty held-out part, and
    when the training part left after the split has fewer than :data:`MIN_FIT_SAMPLES`; each message counts the
    samples given, not only the part the fit saw ("got 3" was once reported: the training part of 5 samples).
    """
    given = len(samples)
    if given < MIN_FIT_SAMPLES:
        raise ValueError(f"need at least {MIN_FIT_SAMPLES} reviewed samples to fit a calibrator, got {given}")
    train, holdout = split_holdout(samples, holdout_fraction, key)
    if not holdout:
        raise ValueError(
            f"the held-out part is empty ({given} samples, holdout_fraction={holdout_fraction}); "
            "review more edges or raise holdout_fraction"
        )
    if len(train) < MIN_FIT_SAMPLES:
        raise ValueError(
            f"of the {given} reviewed samples, {len(holdout)} are held out to check the fit, which leaves "
            f"{len(train)} to fit on; the fit needs at least {MIN_FIT_SAMPLES}: review more edges"
        )
    calibrator = fit_calibrator(train, method)
    before = evaluate(holdout, n_bins)
    after = evaluate(holdout, n_bins, calibrator)
    return FitResult(
        calibrator=calibrator,
        train_samples=len(train),
        holdout_samples=len(holdout),
        before=before,
        after=after,
        improves=after.ece < before.ece,
    )


def _as_array(values: Sequence[float], what: str) -> FloatArray:
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    bad = ~((array >= 0.0) & (array <= 1.0))  # also catches NaN
    if bad.any():
        first = float(array[np.argmax(bad)])
        raise ValueError(f"{what} must lie in [0, 1]; got {first} ({int(bad.sum())} value(s) out of range)")
    return array


def _arrays(samples: Sequence[Sample]) -> tuple[FloatArray, FloatArray]:
    if not samples:
        raise ValueError("no samples: calibration needs at least one reviewed edge")
    confidence = _as_array([s.predicted_confidence for s in samples], "predicted_confidence")
    outcome = np.asarray([1.0 if s.correct else 0.0 for s in samples], dtype=np.float64)
    return confidence, outcome


def _logit(p: FloatArray) -> FloatArray:
    clipped = np.clip(p, CLIP, 1.0 - CLIP)
    return np.asarray(np.log(clipped) - np.log1p(-clipped), dtype=np.float64)


def _sigmoid(z: FloatArray) -> FloatArray:
    # The tanh form never overflows, unlike 1 / (1 + exp(-z)) for very negative z.
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * z)), dtype=np.float64)


def _objective(theta: FloatArray, x: FloatArray, y: FloatArray, l2: float) -> float:
    z = theta[0] * x + theta[1]
    log_loss = np.mean(np.logaddexp(0.0, z) - y * z)
    return float(log_loss + l2 * ((theta[0] - 1.0) ** 2 + theta[1] ** 2))


def _newton(x: FloatArray, y: FloatArray, *, fit_bias: bool, l2: float) -> tuple[float, float]:
    """Damped Newton on the penalised mean log loss, starting from the identity; ``b`` stays 0 unless ``fit_bias``."""
    theta = np.array([1.0, 0.0])
    size = 2 if fit_bias else 1
    value = _objective(theta, x, y, l2)
    for _ in range(_MAX_NEWTON_ITERATIONS):
        z = theta[0] * x + theta[1]
        q = _sigmoid(z)
        residual = q - y
        weight = q * (1.0 - q)
        gradient = np.array(
            [np.mean(residual * x) + 2.0 * l2 * (theta[0] - 1.0), np.mean(residual) + 2.0 * l2 * theta[1]]
        )[:size]
        cross = np.mean(weight * x)
        hessian = np.array([[np.mean(weight * x * x), cross], [cross, np.mean(weight)]])[:size, :size]
        hessian += 2.0 * l2 * np.eye(size)
        if float(np.max(np.abs(gradient))) < _TOLERANCE:
            break
        try:
            step = np.linalg.solve(hessian + 1e-12 * np.eye(size), gradient)
        except np.linalg.LinAlgError:
            step = gradient  # a singular Hessian (no penalty, degenerate data): fall back to a gradient step
        if float(step @ gradient) <= 0.0:
            step = gradient
        full_step = np.zeros(2)
        full_step[:size] = step
        # Backtracking (Armijo) line search: halve the step until the objective decreases enough.
        t = 1.0
        decrease = float(step @ gradient)
        while True:
            candidate = theta - t * full_step
            candidate_value = _objective(candidate, x, y, l2)
            if candidate_value <= value - 1e-4 * t * decrease or t < 1e-12:
                break
            t *= 0.5
        if candidate_value > value:
            break
        moved = float(np.max(np.abs(candidate - theta)))
        theta, value = candidate, candidate_value
        if moved < _TOLERANCE:
            break
    return float(theta[0]), float(theta[1])
