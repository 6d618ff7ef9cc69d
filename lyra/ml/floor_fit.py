"""Fitting the relevance floor (:mod:`lyra.ml.relevance`) on labelled pairs: pure functions, no I/O.

The floor is chosen on the scores of *relevant* (claim, passage) pairs alone: the highest floor that keeps at
least ``target`` of them. What it then drops of off-topic pairs is measured, never optimised into the floor; the
one place the off-topic pairs of the fit split count is the choice between weightings (:func:`weight_grid`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32] | npt.NDArray[np.float64]

_SPACE = re.compile(r"\s+")
_EDGE_CHARS = 50  # a rationale sentence cut by a chunk boundary is found by its first or last 50 characters


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def rationale_chunks(sentences: Sequence[str], rationale: Sequence[int], chunks: Sequence[str]) -> list[int]:
    """The indices of ``chunks`` that carry at least one rationale sentence (``sentences[i]`` for ``i`` in
    ``rationale``), in chunk order.

    A sentence is carried by a chunk that contains it whole (whitespace and case aside). A sentence that no chunk
    contains whole (the chunker split it differently from the data set) is carried by the chunks that contain its
    first or its last 50 characters. A rationale sentence found nowhere adds no chunk."""
    normed = [_norm(c) for c in chunks]
    found: set[int] = set()
    for index in rationale:
        sentence = _norm(sentences[index])
        if not sentence:
            continue
        whole = {i for i, c in enumerate(normed) if sentence in c}
        if not whole:
            edges = {sentence[:_EDGE_CHARS], sentence[-_EDGE_CHARS:]}
            whole = {i for i, c in enumerate(normed) if any(e in c for e in edges)}
        found |= whole
    return sorted(found)


def share_at_least(scores: FloatArray | Sequence[float], floor: float) -> float:
    """The share of ``scores`` at or above ``floor`` (0.0 for no scores)."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        return 0.0
    return float(np.count_nonzero(values >= floor) / values.size)


def fit_floor(relevant: FloatArray | Sequence[float], target: float) -> float:
    """The highest floor that keeps at least ``target`` (0 < target <= 1) of the ``relevant`` scores: the k-th
    largest score, k = ceil(target * n). Raises ValueError without scores or with a target outside (0, 1]."""
    if not 0.0 < target <= 1.0:
        raise ValueError(f"target recall must be in (0, 1], got {target}")
    values = np.sort(np.asarray(relevant, dtype=np.float64))[::-1]
    if values.size == 0:
        raise ValueError("no relevant scores to fit a floor on")
    keep = max(1, math.ceil(target * values.size - 1e-9))
    return float(values[keep - 1])


def round_down(value: float, digits: int = 2) -> float:
    """``value`` rounded towards minus infinity at ``digits`` decimals: a floor rounded this way keeps at least
    what the exact one kept."""
    scale = 10.0**digits
    return math.floor(value * scale + 1e-9) / scale


@dataclass(frozen=True)
class WeightRow:
    """One weighting of the fit split: its fitted floor and what that floor drops of the off-topic pairs."""

    w_emb: float
    w_terms: float
    floor: float
    offtopic_dropped: float


def weight_grid(
    relevant_cosine: FloatArray,
    relevant_overlap: FloatArray,
    offtopic_cosine: FloatArray,
    offtopic_overlap: FloatArray,
    target: float,
    steps: int = 10,
) -> list[WeightRow]:
    """For ``w_emb`` in 0, 1/steps, ..., 1 and ``w_terms = 1 - w_emb``: the floor fitted on the relevant pairs and
    the share of off-topic pairs it drops (both from the same, fit, split). The weights sum to 1, so floors of
    different rows are on one scale."""
    rows: list[WeightRow] = []
    for step in range(steps + 1):
        w_emb = round(step / steps, 6)
        w_terms = round(1.0 - w_emb, 6)
        relevant = w_emb * np.asarray(relevant_cosine, np.float64) + w_terms * np.asarray(relevant_overlap, np.float64)
        offtopic = w_emb * np.asarray(offtopic_cosine, np.float64) + w_terms * np.asarray(offtopic_overlap, np.float64)
        floor = fit_floor(relevant, target)
        rows.append(WeightRow(w_emb, w_terms, floor, 1.0 - share_at_least(offtopic, floor)))
    return rows
