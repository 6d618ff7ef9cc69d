"""Measure an NLI judge on a labelled set: accuracy, macro-F1, confusion matrix, calibration."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from lyra.core.errors import InvalidInputError
from lyra.ml.protocols import LABELS, NLIJudge, NLIResult


class LabelledPair(BaseModel):
    id: str
    premise: str
    hypothesis: str
    label: str
    kind: str = ""
    topic: str = ""


class NLIEvaluation(BaseModel):
    judge: str
    pairs: int
    seconds: float
    accuracy: float
    macro_f1: float
    per_class: dict[str, dict[str, float]]  # label -> precision, recall, f1, support
    confusion: list[list[int]]  # rows: gold (LABELS order), columns: predicted
    brier: float
    ece: float
    mean_confidence_right: float
    mean_confidence_wrong: float
    by_method: dict[str, int]
    errors_by_kind: dict[str, int]


def load_pairs(path: Path) -> list[LabelledPair]:
    pairs: list[LabelledPair] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            pair = LabelledPair.model_validate(json.loads(line))
        except (json.JSONDecodeError, ValueError) as exc:
            raise InvalidInputError(f"{path}:{number}", f"not a labelled pair: {exc}") from None
        if pair.label not in LABELS:
            raise InvalidInputError(f"{path}:{number}.label", f"must be one of {LABELS}")
        pairs.append(pair)
    return pairs


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool], bins: int = 10) -> float:
    conf = np.asarray(confidences, dtype=float)
    hit = np.asarray(correct, dtype=float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    total = 0.0
    for low, high in itertools.pairwise(edges):
        mask = (conf > low) & (conf <= high) if low > 0 else (conf >= low) & (conf <= high)
        if mask.any():
            total += mask.mean() * abs(hit[mask].mean() - conf[mask].mean())
    return float(total)


def score(pairs: Sequence[LabelledPair], results: Sequence[NLIResult], judge: str, seconds: float) -> NLIEvaluation:
    index: dict[str, int] = {label: i for i, label in enumerate(LABELS)}
    confusion = np.zeros((3, 3), dtype=np.int64)
    brier = 0.0
    right_conf: list[float] = []
    wrong_conf: list[float] = []
    by_method: dict[str, int] = {}
    errors_by_kind: dict[str, int] = {}
    for pair, result in zip(pairs, results, strict=True):
        confusion[index[pair.label]][index[result.label]] += 1
        brier += sum((result.probs.get(lab, 0.0) - (1.0 if lab == pair.label else 0.0)) ** 2 for lab in LABELS)
        (right_conf if result.label == pair.label else wrong_conf).append(result.confidence)
        by_method[result.method] = by_method.get(result.method, 0) + 1
        if result.label != pair.label:
            key = f"{pair.label}->{result.label}:{pair.kind}"
            errors_by_kind[key] = errors_by_kind.get(key, 0) + 1
    per_class: dict[str, dict[str, float]] = {}
    for label, i in index.items():
        tp = confusion[i, i]
        precision = tp / confusion[:, i].sum() if confusion[:, i].sum() else 0.0
        recall = tp / confusion[i, :].sum() if confusion[i, :].sum() else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_class[label] = {
            "precision": float(precision),
            "recall": float(recall),
            "f1": float(f1),
            "support": float(confusion[i, :].sum()),
        }
    n = len(pairs)
    return NLIEvaluation(
        judge=judge,
        pairs=n,
        seconds=seconds,
        accuracy=float(np.trace(confusion) / n) if n else 0.0,
        macro_f1=float(np.mean([c["f1"] for c in per_class.values()])),
        per_class=per_class,
        confusion=confusion.tolist(),
        brier=brier / n if n else 0.0,
        ece=expected_calibration_error(
            [r.confidence for r in results], [p.label == r.label for p, r in zip(pairs, results, strict=True)]
        ),
        mean_confidence_right=float(np.mean(right_conf)) if right_conf else 0.0,
        mean_confidence_wrong=float(np.mean(wrong_conf)) if wrong_conf else 0.0,
        by_method=by_method,
        errors_by_kind=dict(sorted(errors_by_kind.items(), key=lambda kv: -kv[1])),
    )


def evaluate(
    judge: NLIJudge, pairs: Sequence[LabelledPair], progress: Callable[[int], None] | None = None
) -> NLIEvaluation:
    results: list[NLIResult] = []
    start = time.perf_counter()
    for pair in pairs:
        results.extend(judge.judge([(pair.premise, pair.hypothesis)]))
        if progress:
            progress(1)
    return score(pairs, results, judge.model_id, time.perf_counter() - start)
