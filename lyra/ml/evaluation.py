"""Measure an NLI judge on a labelled set: accuracy, macro-F1, confusion matrix, calibration.

Two file schemas are read, one JSON object a line:

* Lyra's own (``config/eval/``): ``id``, ``premise``, ``hypothesis``, ``label`` (entailment / contradiction /
  neutral), optional ``kind`` and ``topic``;
* the shared claim-verification schema (SciFact, Check-COVID): ``pair_id``, ``claim``, ``evidence_text``, ``label``
  (SUPPORT / CONTRADICT / NEI), optional ``evidence_title``, ``evidence_sentences``, ``rationale_idx`` (sentences that
  carry the verdict) and ``claim_type``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel

from lyra.core.errors import InvalidInputError
from lyra.ml.protocols import LABELS, NLIJudge, NLIResult

SHARED_LABELS: dict[str, str] = {"SUPPORT": "entailment", "CONTRADICT": "contradiction", "NEI": "neutral"}


class LabelledPair(BaseModel):
    id: str
    premise: str
    hypothesis: str
    label: str
    kind: str = ""
    topic: str = ""
    sentences: list[str] = []  # the premise split into sentences, when the data set gives them
    rationale: list[int] = []  # indices into ``sentences`` that carry the verdict (empty for neutral)


class _SharedPair(BaseModel):
    """A line of the shared claim-verification schema."""

    pair_id: str
    claim: str
    evidence_text: str
    label: Literal["SUPPORT", "CONTRADICT", "NEI"]
    evidence_title: str = ""
    evidence_sentences: list[str] = []
    rationale_idx: list[int] = []
    claim_type: str | None = None

    def to_pair(self) -> LabelledPair:
        bad = [i for i in self.rationale_idx if not 0 <= i < len(self.evidence_sentences)]
        if bad:
            raise ValueError(f"rationale_idx {bad} out of range for {len(self.evidence_sentences)} sentences")
        return LabelledPair(
            id=self.pair_id,
            premise=self.evidence_text,
            hypothesis=self.claim,
            label=SHARED_LABELS[self.label],
            kind=self.claim_type or "",
            topic=self.evidence_title,
            sentences=self.evidence_sentences,
            rationale=self.rationale_idx,
        )


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
    swap_rate: float  # entailment<->contradiction confusions / pairs whose gold label is directional
    pairs_per_second: float
    mean_confidence_right: float
    mean_confidence_wrong: float
    by_method: dict[str, int]
    errors_by_kind: dict[str, int]


HELD_OUT_FOLD = 0
FOLDS = 5


def claim_fold(claim: str, folds: int = FOLDS) -> int:
    """A fixed fold for a claim (sha256 of its text): pairs of one claim are always on the same side."""
    return int(hashlib.sha256(claim.encode("utf-8")).hexdigest(), 16) % folds


def parse_pair(raw: object) -> LabelledPair:
    """One line of either schema (the shared one is recognised by its ``claim`` field)."""
    if isinstance(raw, dict) and "claim" in raw:
        return _SharedPair.model_validate(raw).to_pair()
    pair = LabelledPair.model_validate(raw)
    if pair.label not in LABELS:
        raise ValueError(f"label {pair.label!r} must be one of {LABELS}")
    return pair


def load_pairs(path: Path) -> list[LabelledPair]:
    if not path.is_file():
        raise InvalidInputError(str(path), "no such labelled file")
    pairs: list[LabelledPair] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            pairs.append(parse_pair(json.loads(line)))
        except (json.JSONDecodeError, ValueError) as exc:
            raise InvalidInputError(f"{path}:{number}", f"not a labelled pair: {exc}") from None
    if not pairs:
        raise InvalidInputError(str(path), "holds no labelled pairs")
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
    directional = int(confusion[:2, :].sum())
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
        swap_rate=float(confusion[0, 1] + confusion[1, 0]) / directional if directional else 0.0,
        pairs_per_second=n / seconds if seconds > 0 else 0.0,
        mean_confidence_right=float(np.mean(right_conf)) if right_conf else 0.0,
        mean_confidence_wrong=float(np.mean(wrong_conf)) if wrong_conf else 0.0,
        by_method=by_method,
        errors_by_kind=dict(sorted(errors_by_kind.items(), key=lambda kv: -kv[1])),
    )


def evaluate(
    judge: NLIJudge,
    pairs: Sequence[LabelledPair],
    progress: Callable[[int], None] | None = None,
    batch_size: int = 16,
) -> NLIEvaluation:
    """Judge the pairs in batches (as ingest does) and score them; the time is the judge's alone."""
    results: list[NLIResult] = []
    start = time.perf_counter()
    for first in range(0, len(pairs), batch_size):
        batch = pairs[first : first + batch_size]
        results.extend(judge.judge([(pair.premise, pair.hypothesis) for pair in batch]))
        if progress:
            progress(len(batch))
    return score(pairs, results, judge.model_id, time.perf_counter() - start)
