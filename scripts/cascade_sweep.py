"""The cascade's threshold swept on the three selection sets (docs/evaluation/stance-variants.md).

The cascade (`LYRA_STANCE_LLM_THRESHOLD`) keeps the network-only verdict of a pair whose confidence is at least the
threshold and puts only the other pairs to the LLM. This script judges the selection sets once with the network-only
judge (the shipped artifact's plain combiner, the one the cascade reads), caches each pair's probabilities in a JSON
file, and for each threshold prints the share of pairs that would reach the LLM and how good the network's own
verdicts are on the pairs it keeps (accuracy, macro-F1), then how its confidence spreads and how well it separates
right verdicts from wrong ones (AUROC). The LLM's verdicts on the rest are not in the cache: the
table bounds the cascade's network half, not its whole.

    python scripts/cascade_sweep.py --data DIR --cache FILE [--model-dir DIR]

DIR holds check_covid_dev.jsonl, scifact_train.jsonl and check_covid_train.jsonl (the last two: their held-out claim
fold only, as `lyra eval nli --split heldout`). Progress goes to stderr, the markdown table to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from lyra.core.settings import load_settings
from lyra.ml.evaluation import HELD_OUT_FOLD, LabelledPair, claim_fold, load_pairs
from lyra.ml.factory import Models
from lyra.ml.protocols import LABELS

SETS: dict[str, tuple[str, bool]] = {  # name: (file, held-out fold only)
    "CC dev": ("check_covid_dev.jsonl", False),
    "SF fold 0": ("scifact_train.jsonl", True),
    "CC fold 0": ("check_covid_train.jsonl", True),
}
THRESHOLDS = (0.0, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 1.01)


def selection_pairs(data: Path) -> dict[str, list[LabelledPair]]:
    out: dict[str, list[LabelledPair]] = {}
    for name, (file, heldout) in SETS.items():
        pairs = load_pairs(data / file)
        out[name] = [p for p in pairs if claim_fold(p.hypothesis) == HELD_OUT_FOLD] if heldout else pairs
    return out


def network_probabilities(data: Path, model_dir: Path | None) -> dict[str, list[dict[str, object]]]:
    """Each selection pair's gold label and the network-only judge's probabilities."""
    update: dict[str, object] = {"nli_backend": "trained", "stance_use_llm": False}
    if model_dir is not None:
        update["stance_model_dir"] = model_dir
    judge = Models(load_settings().model_copy(update=update)).nli
    cached: dict[str, list[dict[str, object]]] = {}
    for name, pairs in selection_pairs(data).items():
        rows: list[dict[str, object]] = []
        for first in range(0, len(pairs), 16):
            batch = pairs[first : first + 16]
            results = judge.judge([(p.premise, p.hypothesis) for p in batch])
            rows += [{"id": p.id, "gold": p.label, "probs": r.probs} for p, r in zip(batch, results, strict=True)]
            print(f"{name}: {len(rows)}/{len(pairs)}", file=sys.stderr)
        cached[name] = rows
    return cached


def macro_f1(gold: list[str], predicted: list[str]) -> float:
    scores = []
    for label in LABELS:
        tp = sum(g == p == label for g, p in zip(gold, predicted, strict=True))
        fp = sum(p == label != g for g, p in zip(gold, predicted, strict=True))
        fn = sum(g == label != p for g, p in zip(gold, predicted, strict=True))
        scores.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return float(np.mean(scores))


def sweep(cached: dict[str, list[dict[str, object]]]) -> list[str]:
    names = list(cached)
    head = ["threshold", *(f"{n}: to LLM" for n in names), "all: to LLM"]
    head += [f"{n}: kept acc / F1" for n in names]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for t in THRESHOLDS:
        shares, quality, sent, total = [], [], 0, 0
        for name in names:
            rows = cached[name]
            probs = [dict(r["probs"]) for r in rows]  # type: ignore[call-overload]
            confidence = [max(p.values()) for p in probs]
            kept = [i for i, c in enumerate(confidence) if c >= t]
            sent += len(rows) - len(kept)
            total += len(rows)
            shares.append(f"{(len(rows) - len(kept)) / len(rows):.0%}")
            gold = [str(rows[i]["gold"]) for i in kept]
            predicted = [max(probs[i], key=probs[i].__getitem__) for i in kept]
            if kept:
                acc = sum(g == p for g, p in zip(gold, predicted, strict=True)) / len(kept)
                quality.append(f"{acc:.2f} / {macro_f1(gold, predicted):.2f} (n={len(kept)})")
            else:
                quality.append("–")
        label = "none (all to LLM)" if t == THRESHOLDS[-1] else ("all kept" if t == 0.0 else f"{t:.2f}")
        lines.append("| " + " | ".join([label, *shares, f"{sent / total:.0%}", *quality]) + " |")
    return lines


def auroc(right: list[float], wrong: list[float]) -> float:
    """The chance that a right verdict's confidence is above a wrong one's (ties count half): 0.5 is no separation."""
    if not right or not wrong:
        return float("nan")
    r, w = np.asarray(right)[:, None], np.asarray(wrong)[None, :]
    return float(((r > w).sum() + 0.5 * (r == w).sum()) / (r.size * w.size))


def spread(cached: dict[str, list[dict[str, object]]]) -> list[str]:
    """How the network's confidence spreads and whether it separates its right verdicts from its wrong ones."""
    head = ["set", "pairs", "confidence min–max", "median", "90th pct", "mean right / wrong", "AUROC right vs wrong"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    everything = [row for rows in cached.values() for row in rows]
    for name, rows in [*cached.items(), ("all", everything)]:
        probs = [dict(r["probs"]) for r in rows]  # type: ignore[call-overload]
        confidence = np.asarray([max(p.values()) for p in probs])
        right = [max(p, key=p.__getitem__) == r["gold"] for p, r in zip(probs, rows, strict=True)]
        good = [float(c) for c, ok in zip(confidence, right, strict=True) if ok]
        bad = [float(c) for c, ok in zip(confidence, right, strict=True) if not ok]
        cells = [
            name,
            str(len(rows)),
            f"{confidence.min():.2f}–{confidence.max():.2f}",
            f"{np.median(confidence):.2f}",
            f"{np.percentile(confidence, 90):.2f}",
            f"{np.mean(good):.3f} / {np.mean(bad):.3f}",
            f"{auroc(good, bad):.3f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder of the three selection files")
    parser.add_argument("--cache", type=Path, required=True, help="JSON of the network's probabilities")
    parser.add_argument("--model-dir", type=Path, default=None, help="the stance artifact (default: the shipped)")
    args = parser.parse_args()
    if args.cache.exists():
        cached = json.loads(args.cache.read_text(encoding="utf-8"))
    else:
        cached = network_probabilities(args.data, args.model_dir)
        args.cache.write_text(json.dumps(cached), encoding="utf-8")
    print("\n".join(sweep(cached)))
    print()
    print("\n".join(spread(cached)))


if __name__ == "__main__":
    main()
