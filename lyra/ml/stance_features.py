"""Evidence cues for the stance judge that a 1.5B model reads poorly on its own.

In abstracts the most common refutation is a *null finding*: "did not reduce", "no significant
difference", a hazard ratio whose 95% CI spans 1, a mean difference whose CI spans 0, p > 0.05.
These cues are read from the premise sentences that best match the claim; the claim's own polarity
("X does not affect Y") decides whether a null finding agrees or disagrees with it.

:func:`features` turns (LLM answers, embedding similarities, cues) into one vector; a small
multinomial logistic model (:class:`StanceCombiner`, weights in ``config/stance_combiner.json``, fitted by
``lyra eval fit-stance`` on the *dev* half of the labelled set) maps it to the three label probabilities.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lyra.ml.protocols import LABELS

_NULL_PHRASES = re.compile(
    r"\b(?:"
    r"did\s+not|does\s+not|do\s+not|was\s+not|were\s+not|is\s+not|are\s+not|had\s+no|has\s+no|have\s+no|"
    r"no\s+(?:statistically\s+)?significant|not\s+(?:statistically\s+)?significant(?:ly)?|non-?significant|"
    r"no\s+(?:clear|meaningful|measurable|detectable|appreciable|consistent|overall|material)?\s*"
    r"(?:difference|effect|association|benefit|change|improvement|reduction|increase|impact|advantage|link)s?|"
    r"failed\s+to|no\s+(?:evidence|sign|signs|indication)|did\s+not\s+differ|unchanged|neither|nor\s+did|"
    r"similar|comparable|indistinguishable|not\s+distinguishable|equivalent|null\s+(?:result|finding|effect)|"
    r"did\s+not\s+change|no\s+longer|unrelated|not\s+related|was\s+not\s+linked|no\s+more\s+likely|"
    r"non-?inferior|remained\s+(?:stable|unchanged|similar)"
    r")\b",
    re.IGNORECASE,
)
_RATIO = re.compile(
    r"\b(?:HR|OR|RR|IRR|aOR|aHR|hazard\s+ratio|odds\s+ratio|risk\s+ratio|relative\s+risk|rate\s+ratio)\b"
    r"[^;]{0,40}?(\d+(?:\.\d+)?)[^;]{0,25}?CI[:\s,]*(\d+(?:\.\d+)?)\s*(?:-|–|to)\s*(\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
_CI_ANY = re.compile(
    r"(?:CI|CrI|interval|range)[:\s,]*([-+]?\$?\d+(?:\.\d+)?)\s*%?\s*(?:to|,|\s-\s|-(?=[-+$\d]))\s*([-+]?\$?\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
_INCREASE = re.compile(
    r"\b(?:increas\w*|higher|more|greater|rise|rose|raise[sd]?|improv\w*|boost\w*|gain\w*|elevat\w*|"
    r"enhanc\w*|longer|larger|faster|better|grew|growth)\b",
    re.IGNORECASE,
)
_DECREASE = re.compile(
    r"\b(?:decreas\w*|reduc\w*|lower\w*|fewer|less|declin\w*|fell|fall\w*|drop\w*|worse\w*|shorter|"
    r"smaller|slower|shrank|cut|diminish\w*|loss|lost)\b",
    re.IGNORECASE,
)
_P_VALUE = re.compile(r"\bp\s*(=|>|≥)\s*(0?\.\d+)", re.IGNORECASE)
_NEGATIVE_CLAIM = re.compile(
    r"\b(?:not|no|never|neither|nor|cannot|without|fails?\s+to|unrelated|independent\s+of|"
    r"does\s+not|do\s+not|did\s+not|has\s+no|have\s+no)\b",
    re.IGNORECASE,
)

FEATURE_NAMES = (
    "bias",
    "llm_true",
    "llm_false",
    "relevance_max",
    "relevance_top2",
    "null_finding",
    "claim_negative",
    "null_x_positive_claim",
    "null_x_negative_claim",
    "llm_true_x_negative_claim",
    "null_anywhere",
    "direction_agrees",
    "direction_conflicts",
)


def _normalise_signs(text: str) -> str:
    return text.replace("\u2212", "-").replace("\u2013", "-").replace("\u2014", "-").replace("$", "")


def direction(text: str) -> int:
    """+1 when the text speaks of increases, -1 of decreases, 0 when neither or both equally."""
    up, down = len(_INCREASE.findall(text)), len(_DECREASE.findall(text))
    return (up > down) - (down > up)


def null_finding_score(text: str) -> float:
    """0..1: how strongly the text reports a null finding (phrases, CIs spanning the null, p > 0.05)."""
    text = _normalise_signs(text)
    score = 0.0
    if _NULL_PHRASES.search(text):
        score += 0.6
    for match in _RATIO.finditer(text):
        low, high = float(match.group(2)), float(match.group(3))
        if low <= 1.0 <= high:
            score += 0.6
    for match in _CI_ANY.finditer(text):
        low, high = float(match.group(1).replace("$", "")), float(match.group(2).replace("$", ""))
        if low < 0.0 < high:  # a difference whose interval spans zero
            score += 0.4
    for match in _P_VALUE.finditer(text):
        value = float(match.group(2))
        if value > 0.05:
            score += 0.4
    return min(score, 1.0)


def claim_is_negative(claim: str) -> bool:
    return bool(_NEGATIVE_CLAIM.search(claim))


def direction_cues(claim: str, evidence: str) -> tuple[float, float]:
    """(agrees, conflicts): 1.0 when the claim and the evidence speak of a change in the same (opposite) direction."""
    claim_direction, evidence_direction = direction(claim), direction(evidence)
    agrees = 1.0 if claim_direction and claim_direction == evidence_direction else 0.0
    conflicts = 1.0 if claim_direction and evidence_direction == -claim_direction else 0.0
    return agrees, conflicts


def features(
    llm_true: float, llm_false: float, similarities: Sequence[float], sentences: Sequence[str], claim: str
) -> np.ndarray:
    sims = np.asarray(similarities, dtype=float) if len(similarities) else np.zeros(1)
    order = np.argsort(-sims)
    top = [sentences[i] for i in order[:2]] if sentences else []
    null = null_finding_score(" ".join(top))
    null_anywhere = null_finding_score(" ".join(sentences))
    negative = 1.0 if claim_is_negative(claim) else 0.0
    agrees, conflicts = direction_cues(claim, " ".join(top))
    return np.asarray(
        [
            1.0,
            llm_true,
            llm_false,
            float(sims.max()),
            float(np.mean(sims[order[:2]])),
            null,
            negative,
            null * (1.0 - negative),
            null * negative,
            llm_true * negative,
            null_anywhere,
            agrees,
            conflicts,
        ],
        dtype=float,
    )


@dataclass
class StanceCombiner:
    """Multinomial logistic regression over named features → (entailment, contradiction, neutral).

    The first feature is the constant bias (not penalised). Fitted on held-out pairs it is also the judge's
    calibration (a multinomial Platt scaling)."""

    weights: np.ndarray  # shape (len(feature_names), 3)
    feature_names: tuple[str, ...] = FEATURE_NAMES
    source: str = ""

    def logits(self, xs: np.ndarray) -> np.ndarray:
        logits: np.ndarray = np.atleast_2d(xs) @ self.weights
        return logits

    def probability_rows(self, xs: np.ndarray) -> np.ndarray:
        logits = self.logits(xs)
        logits = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        probs: np.ndarray = exp / exp.sum(axis=1, keepdims=True)
        return probs

    def probabilities(self, x: np.ndarray) -> dict[str, float]:
        p = self.probability_rows(x)[0]
        return {label: float(p[i]) for i, label in enumerate(LABELS)}

    @classmethod
    def fit(
        cls,
        xs: np.ndarray,
        labels: Sequence[str],
        l2: float = 0.01,
        steps: int = 4000,
        feature_names: tuple[str, ...] = FEATURE_NAMES,
        balanced: bool = False,
    ) -> StanceCombiner:
        """Plain gradient descent on the cross-entropy with an L2 penalty (bias not penalised). ``balanced``: each
        label's rows weigh as much in all as any other label's (rows weighted by the inverse of their label's count),
        so a label the fitting pairs hold less of is not traded away for the others."""
        if xs.shape[1] != len(feature_names):
            raise ValueError(f"{xs.shape[1]} feature columns for {len(feature_names)} names")
        y = np.zeros((len(labels), 3))
        for i, label in enumerate(labels):
            y[i, LABELS.index(label)] = 1.0
        counts = y.sum(axis=0)
        row_weight = (y @ np.where(counts > 0, len(labels) / (3 * np.maximum(counts, 1)), 0.0))[:, None]
        if not balanced:
            row_weight = np.ones((len(labels), 1))
        w = np.zeros((xs.shape[1], 3))
        penalty = np.ones_like(w)
        penalty[0, :] = 0.0
        rate = 0.5
        for _ in range(steps):
            logits = xs @ w
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            grad = xs.T @ ((p - y) * row_weight) / row_weight.sum() + l2 * penalty * w
            w -= rate * grad
        return cls(w, feature_names)

    def to_dict(self, note: str) -> dict[str, object]:
        return {
            "features": list(self.feature_names),
            "labels": list(LABELS),
            "weights": self.weights.round(6).tolist(),
            "note": note,
        }

    def save(self, path: Path, note: str) -> None:
        path.write_text(json.dumps(self.to_dict(note), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(
        cls, data: dict[str, object], feature_names: tuple[str, ...] = FEATURE_NAMES, source: str = ""
    ) -> StanceCombiner:
        if data.get("features") != list(feature_names) or data.get("labels") != list(LABELS):
            raise ValueError(f"{source or 'the combiner'} was fitted for other features/labels; refit it")
        weights = np.asarray(data["weights"], dtype=float)
        if weights.shape != (len(feature_names), 3):
            raise ValueError(f"{source or 'the combiner'}: weights of shape {weights.shape}")
        return cls(weights, feature_names, source=source)

    @classmethod
    def load(cls, path: Path, feature_names: tuple[str, ...] = FEATURE_NAMES) -> StanceCombiner:
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")), feature_names, source=str(path))
