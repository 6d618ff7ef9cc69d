"""Which sentences of a passage the stance network reads when an artifact reads only the top k of them.

Two selectors (``lyra train stance --top-k-sentences K --sentence-selector NAME``; the comparison is in
docs/evaluation/stance-variants.md):

* ``cosine`` (the default): the k sentences closest to the claim by MiniLM embedding cosine.
* ``rationale``: a binary logistic regression over a few cheap features of each (claim, sentence) — the embedding
  cosine and its gap to and rank among the passage's best, the claim's content words the sentence repeats, numbers,
  result wording, the sentence's position and length — fitted on the rationale sentences (``rationale_idx``) of the
  pairs in the network's training folds only (never the calibration or held-out folds): those of the decided pairs,
  and of Check-COVID's NEI pairs, which mark the sentences that bear on the claim without deciding it. It ranks the
  sentences; the k best are read. It does not read the stance network's own probabilities: that would make the
  network read every sentence to choose the few it reads.

The fitted selector is stored next to the artifact's tensors (:data:`SELECTOR_FILE`), its sha256 in the manifest,
and checked at load like the tensors.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lyra.core.errors import ConfigError
from lyra.ml.weights import sha256_file

SELECTORS = ("cosine", "rationale")
SELECTOR_FILE = "sentence_selector.json"
SELECTOR_FEATURES = (
    "bias",
    "cosine",
    "cosine_gap",  # the sentence's cosine minus the passage's best
    "cosine_top",  # 1 / (1 + the sentence's cosine rank in the passage)
    "claim_overlap",  # share of the claim's content words the sentence repeats
    "numbers",  # the sentence holds a number
    "result_words",  # result wording: significant, increased, associated, no difference, ...
    "position",  # 0 for the first sentence, 1 for the last
    "first",
    "last",
    "log_words",
)
_WORD = re.compile(r"[a-z0-9]+")
_NUMBER = re.compile(r"\d")
_RESULT = re.compile(
    r"\b(significant\w*|increas\w*|decreas\w*|reduc\w*|associat\w*|higher|lower|improv\w*|differ\w*|effect\w*|"
    r"risk|odds|ratio|correlat\w*|suggest\w*|conclu\w*|found|show\w*|demonstrat\w*|indicat\w*|result\w*)\b"
)
_STOP = frozenset(
    "the and for with that this from are was were has have had not but can may its their into than then there these "
    "those which who whom whose what when where why how all any each more most other some such only own same also "
    "been being does did doing will would should could about against between during before after above below".split()
)


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP}


def sentence_features(
    claim: str, sentences: Sequence[str], claim_vector: np.ndarray, sentence_vectors: np.ndarray
) -> np.ndarray:
    """The (sentences x :data:`SELECTOR_FEATURES`) features of one passage; the vectors are unit-length
    embeddings of the claim and of each sentence."""
    n = len(sentences)
    if n == 0:
        return np.zeros((0, len(SELECTOR_FEATURES)))
    cosine = np.asarray(sentence_vectors, dtype=float) @ np.asarray(claim_vector, dtype=float)
    rank = np.empty(n)
    rank[np.argsort(-cosine, kind="stable")] = np.arange(n)
    claim_words = _content_words(claim)
    rows = []
    for i, sentence in enumerate(sentences):
        words = _content_words(sentence)
        rows.append(
            [
                1.0,
                float(cosine[i]),
                float(cosine[i] - cosine.max()),
                1.0 / (1.0 + float(rank[i])),
                len(claim_words & words) / max(1, len(claim_words)),
                1.0 if _NUMBER.search(sentence) else 0.0,
                1.0 if _RESULT.search(sentence.lower()) else 0.0,
                i / (n - 1) if n > 1 else 0.0,
                1.0 if i == 0 else 0.0,
                1.0 if i == n - 1 else 0.0,
                math.log1p(len(sentence.split())),
            ]
        )
    return np.asarray(rows, dtype=float)


def top_k(scores: np.ndarray, k: int) -> list[int]:
    """The indices of the ``k`` highest scores (ties: the earlier sentence), in the sentences' original order."""
    return sorted(np.argsort(-np.asarray(scores, dtype=float), kind="stable")[:k].tolist())


@dataclass(frozen=True)
class RationaleSelector:
    """A binary logistic regression over standardised :data:`SELECTOR_FEATURES`: P(the sentence is a rationale)."""

    weights: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    feature_names: tuple[str, ...] = SELECTOR_FEATURES
    l2: float = 1.0

    @classmethod
    def fit(cls, features: np.ndarray, targets: np.ndarray, l2: float = 1.0, iterations: int = 50) -> RationaleSelector:
        """Newton's method on the L2-penalised log-loss (the bias unpenalised). ``features``: rows of
        :data:`SELECTOR_FEATURES`; ``targets``: 1 for a rationale sentence, 0 for any other."""
        xs = np.asarray(features, dtype=float)
        ys = np.asarray(targets, dtype=float)
        if xs.ndim != 2 or xs.shape[1] != len(SELECTOR_FEATURES) or len(xs) != len(ys):
            raise ValueError(f"features must be (n x {len(SELECTOR_FEATURES)}) with one target a row")
        if len(set(ys.tolist())) != 2:
            raise ValueError("the selector needs rationale and other sentences to learn from")
        mean = xs.mean(axis=0)
        scale = xs.std(axis=0)
        mean[0], scale[0] = 0.0, 1.0  # the bias column stays 1
        scale[scale == 0] = 1.0
        z = (xs - mean) / scale
        penalty = np.full(z.shape[1], l2)
        penalty[0] = 0.0
        w = np.zeros(z.shape[1])
        for _ in range(iterations):
            p = 1.0 / (1.0 + np.exp(-(z @ w)))
            gradient = z.T @ (p - ys) + penalty * w
            hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty) + 1e-9 * np.eye(z.shape[1])
            step = np.linalg.solve(hessian, gradient)
            w -= step
            if float(np.abs(step).max()) < 1e-8:
                break
        return cls(w, mean, scale, SELECTOR_FEATURES, l2)

    def scores(self, features: np.ndarray) -> np.ndarray:
        """P(rationale) for each row of features."""
        z = (np.asarray(features, dtype=float) - self.mean) / self.scale
        scores: np.ndarray = 1.0 / (1.0 + np.exp(-(z @ self.weights)))
        return scores

    def to_dict(self, note: str = "") -> dict[str, Any]:
        return {
            "kind": "rationale",
            "features": list(self.feature_names),
            "weights": [round(float(x), 6) for x in self.weights],
            "mean": [round(float(x), 6) for x in self.mean],
            "scale": [round(float(x), 6) for x in self.scale],
            "l2": self.l2,
            "note": note,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "") -> RationaleSelector:
        names = tuple(data.get("features") or ())
        if names != SELECTOR_FEATURES:
            raise ConfigError(f"the sentence selector in {source} reads other features ({list(names)})")
        arrays = [np.asarray(data.get(key) or [], dtype=float) for key in ("weights", "mean", "scale")]
        if any(a.shape != (len(names),) for a in arrays):
            raise ConfigError(f"the sentence selector in {source} has {len(names)} features but other array sizes")
        return cls(arrays[0], arrays[1], arrays[2], names, float(data.get("l2", 1.0)))

    def write(self, folder: Path, note: str = "") -> dict[str, Any]:
        """Write the selector into an artifact folder; returns the manifest entry (file, sha256)."""
        path = folder / SELECTOR_FILE
        path.write_text(json.dumps(self.to_dict(note), indent=2) + "\n", encoding="utf-8")
        return {"kind": "rationale", "file": SELECTOR_FILE, "sha256": sha256_file(path), "note": note}


def selector_file(entry: object) -> str | None:
    """The file a manifest's ``sentence_selector`` entry keeps its fitted selector in (None: nothing to read)."""
    if isinstance(entry, dict) and entry.get("kind") == "rationale":
        return str(entry.get("file", SELECTOR_FILE))
    return None


def read_selector(folder: Path, entry: object) -> RationaleSelector | None:
    """The artifact's selector from its manifest entry (None: the cosine selector), after checking its sha256."""
    if entry is None:
        return None
    if not isinstance(entry, dict) or entry.get("kind") not in SELECTORS:
        raise ConfigError(f"the stance artifact in {folder} names an unknown sentence selector: {entry!r}")
    name = selector_file(entry)
    if name is None:
        return None
    path = folder / name
    if not path.is_file():
        raise ConfigError(f"the sentence selector {path} is missing", hint="retrain with `lyra train stance`")
    actual = sha256_file(path)
    if actual != entry.get("sha256"):
        raise ConfigError(
            f"{path} has sha256 {actual[:16]}…, the manifest says {str(entry.get('sha256'))[:16]}…; refusing to load it"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not JSON: {exc}") from None
    return RationaleSelector.from_dict(data, str(path))


def rationale_recall(selected: Sequence[Sequence[int]], rationale: Sequence[Sequence[int]]) -> dict[str, float]:
    """How many rationale sentences the selected ones cover, over pairs that have rationale sentences:
    ``sentences`` (the share of all rationale sentences selected), ``all`` (pairs whose rationale is wholly
    selected) and ``any`` (pairs with at least one rationale sentence selected)."""
    found = total = whole = some = pairs = 0
    for chosen, gold in zip(selected, rationale, strict=True):
        if not gold:
            continue
        hit = len(set(chosen) & set(gold))
        pairs += 1
        found += hit
        total += len(set(gold))
        whole += hit == len(set(gold))
        some += hit > 0
    if not pairs:
        return {"pairs": 0.0, "sentences": 0.0, "all": 0.0, "any": 0.0}
    return {"pairs": float(pairs), "sentences": found / total, "all": whole / pairs, "any": some / pairs}


Embed = Callable[[Sequence[str]], np.ndarray]


def passage_features(passages: Sequence[tuple[str, Sequence[str]]], embed: Embed) -> list[np.ndarray]:
    """:func:`sentence_features` of each (claim, sentences) passage, every distinct text embedded once in one batch."""
    texts = list(dict.fromkeys(text for claim, sentences in passages for text in (claim, *sentences)))
    vectors = dict(zip(texts, np.asarray(embed(texts), dtype=float), strict=True)) if texts else {}
    dimension = len(next(iter(vectors.values()))) if vectors else 0
    return [
        sentence_features(
            claim,
            sentences,
            vectors[claim],
            np.asarray([vectors[s] for s in sentences]).reshape(len(sentences), dimension),
        )
        for claim, sentences in passages
    ]


def select(
    passages: Sequence[tuple[str, Sequence[str]]], k: int, embed: Embed, selector: RationaleSelector | None
) -> list[list[int]]:
    """Per (claim, sentences) passage, the indices of the ``k`` sentences the network reads (in their order):
    the selector's best, or without one the closest to the claim by embedding cosine. A passage of at most ``k``
    sentences is read whole (nothing embedded for it)."""
    long = [i for i, (_, sentences) in enumerate(passages) if len(sentences) > k]
    out = [list(range(len(sentences))) for _, sentences in passages]
    for i, features in zip(long, passage_features([passages[i] for i in long], embed), strict=True):
        scores = features[:, SELECTOR_FEATURES.index("cosine")] if selector is None else selector.scores(features)
        out[i] = top_k(scores, k)
    return out


def fit_selector(
    passages: Sequence[tuple[str, Sequence[str], Sequence[int]]], embed: Embed, l2: float = 1.0
) -> RationaleSelector:
    """The rationale selector fitted on (claim, sentences, rationale indices) passages: a rationale sentence is a
    positive row, every other sentence of the passage a negative one. Passages without rationale are skipped."""
    kept = [(c, s, r) for c, s, r in passages if r and len(s) > 1]
    if not kept:
        raise ValueError("no passage with rationale sentences to fit the selector on")
    features = passage_features([(c, s) for c, s, _ in kept], embed)
    targets = [np.isin(np.arange(len(s)), list(r)).astype(float) for _, s, r in kept]
    return RationaleSelector.fit(np.vstack(features), np.concatenate(targets), l2=l2)
