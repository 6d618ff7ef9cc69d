"""Each judge measured on the task's own corrections (docs/concepts/assistant-judge.md, "Each judge measured").

``cypher/judging/judge_agreement.cypher`` reads, for every (fragment, claim) pair of the task a person judged
(feedback edge_correct), each other judge's latest verdict before the person's first one and the person's latest
verdict. Per judge (its judge string: ``offline:<artifact>`` or ``assistant:<client>/<model>``) this service
counts agreements and the confusion between labels, measures a reliability table (confidence bins: count, mean
confidence, accuracy), Brier score and ECE with :func:`lyra.ml.calibration.evaluate`, and, once the judge has
``judge_calibration_min`` samples, fits the calibrator of decision record 0010 to that judge alone
(:func:`lyra.ml.calibration.fit_and_check`: Platt scaling checked on a held-out part). The fitted mapping is
reported, never applied: edge weights stay what each judge said (decision record 0003).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lyra.graph.store import GraphStore, to_plain
from lyra.graph.tasks import TaskRepository
from lyra.ml.calibration import Sample, evaluate, fit_and_check
from lyra.models.judge_calibration import (
    GetJudgeCalibrationRequest,
    JudgeCalibration,
    JudgeCalibrationReport,
    JudgeFit,
    ReliabilityRow,
)

LABELS = ("supports", "refutes", "neutral")


@dataclass(frozen=True)
class PairSample(Sample):
    """One judge's verdict on one pair a person judged; ``pair`` keys the held-out split (stable as reviews grow)."""

    pair: str = ""


def judge_kind(judge: str) -> str:
    return "assistant" if judge.startswith("assistant:") else "offline"


def measure_judge(judge: str, rows: Sequence[dict[str, Any]], bins: int, min_corrections: int) -> JudgeCalibration:
    """One judge's agreement, confusion, reliability table and (with enough samples) fitted mapping, from its rows of
    judging/judge_agreement (relation, confidence, human_relation, claim_id, fragment_id)."""
    confusion: dict[str, dict[str, int]] = {label: dict.fromkeys(LABELS, 0) for label in LABELS}
    agreements = 0
    for row in rows:
        said, truth = str(row["relation"]), str(row["human_relation"])
        confusion.setdefault(said, dict.fromkeys(LABELS, 0))
        confusion[said][truth] = confusion[said].get(truth, 0) + 1
        agreements += said == truth
    samples = [
        PairSample(
            predicted_label=str(row["relation"]),
            predicted_confidence=min(1.0, max(0.0, float(row["confidence"]))),
            correct_label=str(row["human_relation"]),
            pair=f"{row['claim_id']}|{row['fragment_id']}",
        )
        for row in rows
        if row["confidence"] is not None
    ]
    brier = ece = None
    reliability: list[ReliabilityRow] = []
    if samples:
        report = evaluate(samples, n_bins=bins)
        brier, ece = report.brier, report.ece
        reliability = [ReliabilityRow.model_validate(b.model_dump()) for b in report.bins]
    fit: JudgeFit | None = None
    note: str | None = None
    if len(samples) < min_corrections:
        note = (
            f"{len(samples)} of the {min_corrections} corrections a fitted mapping needs (LYRA_JUDGE_CALIBRATION_MIN)"
        )
    else:
        try:
            result = fit_and_check(samples, method="platt", key=lambda s: getattr(s, "pair", repr(s)), n_bins=bins)
        except ValueError as exc:
            note = f"no mapping fitted: {exc}"
        else:
            fit = JudgeFit(
                method=result.calibrator.method,
                a=result.calibrator.a,
                b=result.calibrator.b,
                train_samples=result.train_samples,
                holdout_samples=result.holdout_samples,
                ece_before=result.before.ece,
                ece_after=result.after.ece,
                improves=result.improves,
            )
    return JudgeCalibration(
        judge=judge,
        kind="assistant" if judge_kind(judge) == "assistant" else "offline",
        samples=len(rows),
        agreements=agreements,
        agreement=agreements / len(rows) if rows else None,
        confusion=confusion,
        brier=brier,
        ece=ece,
        reliability=reliability,
        fit=fit,
        fit_note=note,
    )


class JudgeCalibrationService:
    def __init__(self, store: GraphStore, tasks: TaskRepository, min_corrections: int) -> None:
        self.store = store
        self.tasks = tasks
        self.min_corrections = min_corrections

    def report(self, request: GetJudgeCalibrationRequest) -> JudgeCalibrationReport:
        """Every judge of the task measured against the task's human corrections. Unknown task: NotFoundError."""
        self.tasks.get(request.task_id)
        rows = [to_plain(r) for r in self.store.run("judging/judge_agreement", {"task_id": request.task_id})]
        by_judge: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            by_judge[str(row["judge"])].append(row)
        judges = [measure_judge(judge, part, request.bins, self.min_corrections) for judge, part in by_judge.items()]
        judges.sort(key=lambda j: (-j.samples, j.judge))
        return JudgeCalibrationReport(
            task_id=request.task_id,
            min_corrections=self.min_corrections,
            corrected_pairs=len({(r["claim_id"], r["fragment_id"]) for r in rows}),
            judges=judges,
        )
