"""Rationale recall@k of the stance judge's sentence selectors (docs/evaluation/stance-variants.md).

Fits the rationale selector exactly as `lyra train stance --sentence-selector rationale` does (on the pairs with
rationale sentences in the network's training folds, claim folds 2-4, of the given training files), then measures
on pairs it never saw how many of their rationale sentences the top k sentences hold, for the plain cosine selector
and for the fitted one: claim fold 0 of each training file (the held-out fold) and Check-COVID dev whole.

    python scripts/selector_recall.py --data DIR [--k 3] [--json]

DIR holds scifact_train.jsonl, check_covid_train.jsonl (training folds fit, fold 0 measured) and check_covid_dev.jsonl
(measured whole). Sentences are the data sets' own (``evidence_sentences``), which the rationale indices point into.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from lyra.ml.embedder import BUILTIN_MINILM, SentenceTransformerEmbedder
from lyra.ml.evaluation import HELD_OUT_FOLD, LabelledPair, claim_fold, load_pairs
from lyra.ml.sentence_selector import fit_selector, rationale_recall, select
from lyra.ml.stance_training import role_of

TRAINING = ("scifact_train.jsonl", "check_covid_train.jsonl")
MEASURED = {"SF fold 0": ("scifact_train.jsonl", True), "CC fold 0": ("check_covid_train.jsonl", True)}
MEASURED["CC dev"] = ("check_covid_dev.jsonl", False)


def _with_rationale(pairs: list[LabelledPair]) -> list[LabelledPair]:
    return [p for p in pairs if p.rationale and p.sentences]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    embed = SentenceTransformerEmbedder(BUILTIN_MINILM, threads=args.threads).embed
    started = time.perf_counter()
    fit_pairs = [p for f in TRAINING for p in _with_rationale(load_pairs(args.data / f)) if role_of(p) == "network"]
    selector = fit_selector([(p.hypothesis, p.sentences, p.rationale) for p in fit_pairs], embed)
    print(
        f"fitted on {len(fit_pairs)} pairs with rationale sentences in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    report: dict[str, object] = {
        "fit_pairs": len(fit_pairs),
        "weights": dict(zip(selector.feature_names, selector.weights.round(3).tolist(), strict=True)),
    }
    lines = [
        f"| set | pairs | cosine: recall@{args.k} sentences / all / any | rationale selector: sentences / all / any |",
        "| --- | --- | --- | --- |",
    ]
    for name, (file, heldout) in MEASURED.items():
        pairs = _with_rationale(load_pairs(args.data / file))
        pairs = [p for p in pairs if claim_fold(p.hypothesis) == HELD_OUT_FOLD] if heldout else pairs
        passages = [(p.hypothesis, p.sentences) for p in pairs]
        gold = [p.rationale for p in pairs]
        cosine = rationale_recall(select(passages, args.k, embed, None), gold)
        fitted = rationale_recall(select(passages, args.k, embed, selector), gold)
        report[name] = {"cosine": cosine, "rationale": fitted}
        cells = [f"{r['sentences']:.3f} / {r['all']:.3f} / {r['any']:.3f}" for r in (cosine, fitted)]
        lines.append(f"| {name} | {len(pairs)} | {cells[0]} | {cells[1]} |")
    print(json.dumps(report, indent=2) if args.json else "\n".join(lines))


if __name__ == "__main__":
    main()
