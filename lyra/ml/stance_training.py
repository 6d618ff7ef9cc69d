"""Training the sentence-level stance network and fitting its pair-level combiner (`lyra train stance`).

Protocol (docs/evaluation/stance-quality.md): every labelled pair gets a fold from its claim (:func:`claim_fold`), so
pairs of one claim never sit on two sides.
* fold 0 is held out: never used by training, kept for measurement (``lyra eval nli --split heldout``);
* fold 1 fits the pair-level combiner, which is also the calibration (a multinomial Platt scaling);
* folds 2-4 train the network, with sentence-level supervision: the rationale sentences of a decided pair carry
  its label, a sampled non-rationale sentence (and sentences of NEI pairs) carry NEUTRAL, and a decided claim with an
  auxiliary verb is negated by rule ("is" → "is not") with the label flipped (direction is the hard part).

Optional first stage (``fever_pairs`` > 0): before the scientific rows, the same trainable layers learn FEVER's
two-way direction signal (claim vs one Wikipedia sentence: SUPPORT / NOT_SUPPORT) through an auxiliary two-way
head that is thrown away afterwards (NOT_SUPPORT is not always a contradiction, so it is not mapped onto the
three-way head). Only the encoder layers carry the stage over; the artifact keeps no auxiliary tensors.

Optional frozen-layer cache (``cache_frozen``): the frozen lower layers' output for each distinct (claim, sentence)
is computed once, without dropout, and every epoch of both stages runs only the trained top layers on it
(``scripts/frozen_cache_bench.py`` measures the saving: about half an epoch's time for mpnet with 3 of 12 layers
trained; the backward pass and the optimiser step are not saved).
"""

from __future__ import annotations

import json
import logging
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lyra.core.text import split_sentences
from lyra.ml.evaluation import HELD_OUT_FOLD, LabelledPair, claim_fold
from lyra.ml.protocols import LABELS

if TYPE_CHECKING:  # torch is imported only when a network is trained
    from lyra.ml.stance_net import StanceNet

log = logging.getLogger(__name__)

CALIBRATION_FOLD = 1
Tick = Callable[[int], None]

_AUXILIARY = re.compile(r"\b(is|are|was|were|can|could|may|might|will|would|should|has|have|had|does|do|did)\b")
_ALREADY_NEGATIVE = re.compile(r"\b(not|no|never|without|neither|nor|cannot)\b|n't\b", re.IGNORECASE)


@dataclass(frozen=True)
class TrainingConfig:
    epochs: int = 3
    learning_rate: float = 1e-4
    head_learning_rate: float = 2e-3
    batch_size: int = 32
    max_length: int = 96
    trainable_layers: int = 3
    neutral_sentences: int = 1  # non-rationale sentences sampled per pair as NEUTRAL rows
    negation_augment: bool = True
    seed: int = 0
    combiner_l2: float = 0.01  # L2 penalty of the pair-level combiners (fitted on the calibration fold)
    combiner_balanced: bool = True  # the combiners' fitting rows weighted so each label weighs the same
    fever_pairs: int = 0  # FEVER pairs in the first (two-way, auxiliary head) stage; 0: no such stage
    fever_epochs: int = 1
    top_k_sentences: int = 0  # the judge reads only k sentences of a passage (0: all of them) ...
    sentence_selector: str = "cosine"  # ... chosen by: lyra.ml.sentence_selector.SELECTORS
    max_rows: int = 0  # a seeded sample of this many training rows (0: all; a CPU-time bound for large encoders)
    cache_frozen: bool = False  # run the frozen lower layers once per row and train on their stored output

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Row:
    claim: str
    sentence: str
    label: int  # index into LABELS


def role_of(pair: LabelledPair) -> str:
    """``heldout``, ``calibration`` or ``network``: which part of the protocol a pair belongs to."""
    fold = claim_fold(pair.hypothesis)
    if fold == HELD_OUT_FOLD:
        return "heldout"
    return "calibration" if fold == CALIBRATION_FOLD else "network"


def negate_claim(claim: str) -> str | None:
    """The claim with "not" after its first auxiliary verb, or None when it has none or is already negative."""
    if _ALREADY_NEGATIVE.search(claim):
        return None
    match = _AUXILIARY.search(claim)
    if match is None:
        return None
    return f"{claim[: match.end()]} not{claim[match.end() :]}"


def sentences_of(pair: LabelledPair) -> list[str]:
    return pair.sentences or split_sentences(pair.premise) or [pair.premise]


def sentence_rows(pairs: Sequence[LabelledPair], config: TrainingConfig) -> list[Row]:
    """Claim-sentence training rows from labelled pairs (see the module docstring)."""
    rng = random.Random(config.seed)
    neutral = LABELS.index("neutral")
    rows: list[Row] = []
    for pair in pairs:
        sentences = sentences_of(pair)
        label = LABELS.index(pair.label)
        rationale = [i for i in pair.rationale if 0 <= i < len(sentences)] if pair.sentences else []
        if label != neutral and rationale:
            rows.extend(Row(pair.hypothesis, sentences[i], label) for i in rationale)
            if len(rationale) > 1:
                rows.append(Row(pair.hypothesis, " ".join(sentences[i] for i in rationale), label))
            others = [i for i in range(len(sentences)) if i not in rationale]
            for i in rng.sample(others, min(config.neutral_sentences, len(others))):
                rows.append(Row(pair.hypothesis, sentences[i], neutral))
            negated = negate_claim(pair.hypothesis) if config.negation_augment else None
            if negated:
                rows.extend(Row(negated, sentences[i], 1 - label) for i in rationale)
        elif label == neutral:
            for i in rng.sample(range(len(sentences)), min(config.neutral_sentences, len(sentences))):
                rows.append(Row(pair.hypothesis, sentences[i], neutral))
        else:  # a decided pair without rationale sentences: the whole passage carries the label
            rows.append(Row(pair.hypothesis, pair.premise, label))
    rng.shuffle(rows)
    return rows[: config.max_rows] if config.max_rows else rows


FEVER_LABELS = ("SUPPORT", "NOT_SUPPORT")


def fever_rows(path: Path, count: int, seed: int) -> list[Row]:
    """``count`` FEVER two-way rows (label 0 = SUPPORT, 1 = NOT_SUPPORT), a seeded sample balanced by label."""
    by_label: dict[str, list[Row]] = {label: [] for label in FEVER_LABELS}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        raw = json.loads(line)
        label = str(raw["label"])
        if label in by_label:
            by_label[label].append(Row(str(raw["claim"]), str(raw["evidence_text"]), FEVER_LABELS.index(label)))
    rng = random.Random(seed)
    rows: list[Row] = []
    for label in FEVER_LABELS:
        pool = by_label[label]
        rows.extend(rng.sample(pool, min(len(pool), count // 2)))
    rng.shuffle(rows)
    return rows


def first_per_label(pairs: Sequence[LabelledPair], count: int) -> list[LabelledPair]:
    """The first ``count`` pairs of each gold label, in their order: a balanced sample."""
    seen: dict[str, int] = {}
    chosen: list[LabelledPair] = []
    for pair in pairs:
        seen[pair.label] = seen.get(pair.label, 0) + 1
        if seen[pair.label] <= count:
            chosen.append(pair)
    return chosen


def length_batches(rows: Sequence[Row], size: int, rng: random.Random) -> list[list[Row]]:
    """Batches of rows of similar length (little padding), in random order."""
    ordered = sorted(rows, key=lambda r: len(r.claim) + len(r.sentence) + rng.random())
    batches = [list(ordered[i : i + size]) for i in range(0, len(ordered), size)]
    rng.shuffle(batches)
    return batches


def run_stage(
    net: StanceNet,
    head: Any,
    rows: Sequence[Row],
    classes: int,
    epochs: int,
    config: TrainingConfig,
    rng: random.Random,
    progress: Tick | None,
    stage: str,
    states: dict[tuple[str, str], Any] | None = None,
) -> list[float]:
    """Train the net's trainable layers and ``head`` (a linear layer over the pooled encoding) on ``rows`` with a
    class-weighted loss, linear warm-up and decay; returns the epoch losses. With ``states`` (each row's frozen-layer
    output, :meth:`StanceNet.frozen_states`) only the trained layers run."""
    import torch

    body = [p for n, p in net.named_parameters() if p.requires_grad and not n.startswith(("head.", "aux_head."))]
    optimizer = torch.optim.AdamW(
        [
            {"params": body, "lr": config.learning_rate},
            {"params": list(head.parameters()), "lr": config.head_learning_rate},
        ],
        weight_decay=0.01,
    )
    per_epoch = (len(rows) + config.batch_size - 1) // config.batch_size
    total = max(1, epochs * per_epoch)
    warmup = max(1, int(0.06 * total))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup) * max(0.0, (total - step) / total)
    )
    counts = np.bincount([r.label for r in rows], minlength=classes).astype(float)
    weights = torch.tensor(len(rows) / (classes * np.maximum(counts, 1.0)), dtype=torch.float32)
    loss_of = torch.nn.CrossEntropyLoss(weight=weights)
    trainable = [p for p in net.parameters() if p.requires_grad] + list(head.parameters())
    losses: list[float] = []
    net.train()
    started = time.perf_counter()
    for epoch in range(epochs):
        running = 0.0
        for batch in length_batches(rows, config.batch_size, rng):
            if states is not None:
                pooled = net.pooled_from([states[(r.claim, r.sentence)] for r in batch])
            else:
                encoded = net.encode([r.claim for r in batch], [r.sentence for r in batch], config.max_length)
                pooled = net.pooled(**encoded)
            loss = loss_of(head(net.dropout(pooled)), torch.tensor([r.label for r in batch]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            running += float(loss.item()) * len(batch)
            if progress is not None:
                progress(len(batch))
        losses.append(running / max(1, len(rows)))
        log.info("%s epoch %d: mean loss %.4f (%.0f s)", stage, epoch + 1, losses[-1], time.perf_counter() - started)
    return losses


def train_network(
    rows: Sequence[Row],
    base: str,
    config: TrainingConfig,
    progress: Tick | None = None,
    first_stage: Sequence[Row] = (),
    cache_progress: Tick | None = None,
) -> tuple[StanceNet, list[float]]:
    """Fine-tune the top layers and head of a :class:`StanceNet` on ``rows``; returns it and the epoch losses.
    With ``first_stage`` rows (two-way, e.g. :func:`fever_rows`) the same layers first learn them through an
    auxiliary two-way head, which is dropped afterwards; the losses then start with that stage's. With
    ``config.cache_frozen`` the frozen layers run once per distinct (claim, sentence) first (``cache_progress``
    counts those rows)."""
    import torch

    from lyra.ml.stance_net import StanceNet

    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    net = StanceNet(base)
    net.freeze_below(config.trainable_layers)
    states = store_frozen_states(net, [*first_stage, *rows], config, cache_progress) if config.cache_frozen else None
    losses: list[float] = []
    if first_stage:
        aux = torch.nn.Linear(net.head.in_features, 2)
        losses += run_stage(net, aux, first_stage, 2, config.fever_epochs, config, rng, progress, "first stage", states)
    losses += run_stage(net, net.head, rows, 3, config.epochs, config, rng, progress, "stance", states)
    net.eval()
    return net, losses


def distinct_inputs(rows: Sequence[Row]) -> list[tuple[str, str]]:
    """The distinct (claim, sentence) inputs of ``rows``, in first-seen order."""
    return list(dict.fromkeys((r.claim, r.sentence) for r in rows))


def store_frozen_states(
    net: StanceNet, rows: Sequence[Row], config: TrainingConfig, progress: Tick | None
) -> dict[tuple[str, str], Any]:
    """Each distinct (claim, sentence) of ``rows`` -> its frozen-layer output (:meth:`StanceNet.frozen_states`), run
    in length order; ``progress`` counts the inputs done."""
    inputs = sorted(distinct_inputs(rows), key=lambda pair: len(pair[0]) + len(pair[1]))  # little padding
    started = time.perf_counter()
    states: dict[tuple[str, str], Any] = {}
    step = 256  # progress granularity; frozen_states batches within each step by length
    for start in range(0, len(inputs), step):
        part = inputs[start : start + step]
        computed = net.frozen_states([c for c, _ in part], [s for _, s in part], config.max_length)
        states.update(zip(part, computed, strict=True))
        if progress is not None:
            progress(len(part))
    stored = sum(int(t.numel()) * 2 for t in states.values())
    log.info(
        "frozen layers run once for %d inputs (%.0f s, %.0f MB kept)",
        len(inputs),
        time.perf_counter() - started,
        stored / 1e6,
    )
    return states


# ------------------------------------------------------------------------------------------ pair level
PAIR_FEATURES = (
    "bias",
    "max_entailment",
    "max_contradiction",
    "entailment_at_best",
    "contradiction_at_best",
    "mean_entailment",
    "mean_contradiction",
    "min_neutral",
)


def pair_features(probs: np.ndarray) -> np.ndarray:
    """One pair's features from its sentences' probabilities (rows: sentences; columns: LABELS order).
    "best" is the sentence least likely neutral: the one most likely to carry the verdict."""
    if len(probs) == 0:
        return np.asarray([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    best = int(np.argmin(probs[:, 2]))
    return np.asarray(
        [
            1.0,
            float(probs[:, 0].max()),
            float(probs[:, 1].max()),
            float(probs[best, 0]),
            float(probs[best, 1]),
            float(probs[:, 0].mean()),
            float(probs[:, 1].mean()),
            float(probs[:, 2].min()),
        ]
    )
