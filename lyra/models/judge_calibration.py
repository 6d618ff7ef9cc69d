"""Each judge measured on the task's own corrections: ``get_judge_calibration`` (docs/concepts/assistant-judge.md,
"Each judge measured")."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lyra.models.api import Request, Response, TaskRequest

JudgeKind = Literal["offline", "assistant"]


class GetJudgeCalibrationFields(Request):
    bins: int = Field(default=10, ge=2, le=20, description="confidence bins of each judge's reliability table")


class GetJudgeCalibrationRequest(GetJudgeCalibrationFields, TaskRequest):
    pass


class ReliabilityRow(Response):
    """One equal-width confidence bin of a judge's reliability table; the means are null when it is empty."""

    lower: float
    upper: float
    count: int
    mean_confidence: float | None
    accuracy: float | None


class JudgeFit(Response):
    """A Platt or temperature mapping of the judge's confidence, fitted on part of its samples and checked on the
    held-out rest (the calibrator of decision record 0010, per judge). Reported, not applied to edge weights."""

    method: str
    a: float = Field(description="slope on the logit of the judge's confidence")
    b: float = Field(description="intercept")
    train_samples: int
    holdout_samples: int
    ece_before: float = Field(description="expected calibration error on the held-out samples, as the judge said")
    ece_after: float = Field(description="the same, through the fitted mapping")
    improves: bool = Field(description="the mapping lowers the held-out error")


class JudgeCalibration(Response):
    judge: str = Field(description="offline:<id> or assistant:<client>/<model>")
    kind: JudgeKind
    samples: int = Field(description="pairs of the task this judge gave a verdict on that a person then judged")
    agreements: int = Field(description="samples where the judge's relation equals the person's")
    agreement: float | None = Field(description="agreements / samples; null without samples")
    confusion: dict[str, dict[str, int]] = Field(
        description="judge's relation -> person's relation -> samples (supports, refutes, neutral)"
    )
    brier: float | None = Field(description="mean squared gap between confidence and being right")
    ece: float | None = Field(description="expected calibration error over the reliability table")
    reliability: list[ReliabilityRow] = Field(
        description="per confidence bin: samples, mean confidence and accuracy (the share the person agreed with)"
    )
    fit: JudgeFit | None = Field(description="the fitted mapping of this judge's confidence; null until it can be")
    fit_note: str | None = Field(description="why there is no fitted mapping (too few corrections, nothing to learn)")


class JudgeCalibrationReport(Response):
    task_id: str
    min_corrections: int = Field(
        description="corrections a judge needs before its confidence mapping is fitted (LYRA_JUDGE_CALIBRATION_MIN)"
    )
    corrected_pairs: int = Field(description="pairs of the task a person judged (feedback edge_correct)")
    judges: list[JudgeCalibration] = Field(description="one entry per judge with samples, most samples first")
