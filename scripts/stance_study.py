"""Stance judge study on real pairs: which signals and which fit make the best pair-level combiner.

Computes, once per pair, everything the trained judge can read — the network's pair features, the cue features of
its decisive sentences, and the local LLM's answers about those sentences (the two yes/no questions and the
one-word verdict) — and keeps them in ``<state>/cache/stance_study.jsonl`` (a second run asks nothing again).
Then fits combiner variants on the calibration fold (claim fold 1 of the training files; optionally plus the
project's hand-written training pairs) and scores each on pairs never fitted: Check-COVID dev, the held-out claim
fold 0 of SciFact train and of Check-COVID train. Prints one markdown table (``--json`` for everything).

    python scripts/stance_study.py [--shared ../shared/training] [--sets calibration,dev,scifact0,handwritten]
                                   [--cached-only] [--json]

The calibration set is always needed (it is what the variants are fitted on); ``handwritten`` adds the variants
fitted with the project's hand-written pairs too; ``--cached-only`` scores on the pairs computed so far.

Fitting uses :class:`StanceCombiner.fit`, the code `lyra train stance` uses; features are computed with
:meth:`TrainedStanceJudge.sentence_probabilities` and :meth:`LLMStanceJudge.questions`, as the judge does at run time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from lyra.core.settings import load_settings
from lyra.ml.evaluation import HELD_OUT_FOLD, LabelledPair, claim_fold, load_pairs, score
from lyra.ml.factory import Models, stance_base_path
from lyra.ml.protocols import LABELS
from lyra.ml.stance_features import StanceCombiner
from lyra.ml.stance_judge import (
    CUE_FEATURES,
    TrainedStanceJudge,
    cue_features,
    decisive_passage,
    results_from_rows,
)
from lyra.ml.stance_training import CALIBRATION_FOLD, PAIR_FEATURES, pair_features

LLM_COLUMNS = ("llm_true", "llm_false", "verdict_agrees", "verdict_disagrees", "verdict_neither")
COLUMNS = (*PAIR_FEATURES, *CUE_FEATURES, *LLM_COLUMNS)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def sets(shared: Path, root: Path) -> dict[str, list[LabelledPair]]:
    scifact = load_pairs(shared / "scifact_train.jsonl")
    covid = load_pairs(shared / "check_covid_train.jsonl")
    fold = claim_fold
    return {
        "calibration": [p for p in [*scifact, *covid] if fold(p.hypothesis) == CALIBRATION_FOLD],
        "dev": load_pairs(shared / "check_covid_dev.jsonl"),
        "scifact0": [p for p in scifact if fold(p.hypothesis) == HELD_OUT_FOLD],
        "covid0": [p for p in covid if fold(p.hypothesis) == HELD_OUT_FOLD],
        "handwritten": load_pairs(root / "config/eval/nli_stance_train.jsonl"),
    }


def pair_key(name: str, pair: LabelledPair, index: int) -> str:
    return f"{name}:{pair.id or index}"


def compute(
    judge: TrainedStanceJudge,
    name: str,
    pairs: Sequence[LabelledPair],
    cache: dict[str, list[float]],
    path: Path,
    tag: str,
) -> np.ndarray:
    """The feature rows (COLUMNS order) of ``pairs``, asking the LLM only for pairs not in ``cache``."""
    assert judge.llm_judge is not None
    started = time.perf_counter()
    asked = 0
    with path.open("a", encoding="utf-8") as out:
        for i, pair in enumerate(pairs):
            key = pair_key(name, pair, i)
            if key in cache:
                continue
            ((sentences, probs),) = judge.sentence_probabilities([(pair.premise, pair.hypothesis)])
            passage = decisive_passage(sentences, probs)
            row = [
                *pair_features(probs).tolist(),
                *cue_features(passage, pair.hypothesis),
                *judge.llm_judge.questions(passage, pair.hypothesis, verdict=True),
            ]
            cache[key] = row
            out.write(json.dumps({"key": key, "tag": tag, "row": row}) + "\n")
            out.flush()
            asked += 1
            if asked % 10 == 0:
                rate = (time.perf_counter() - started) / asked
                log(f"{name}: {i + 1}/{len(pairs)} ({rate:.1f} s a pair)")
    return np.asarray([cache[pair_key(name, p, i)] for i, p in enumerate(pairs)], dtype=float)


def logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, 1e-4, 1 - 1e-4)
    return np.asarray(np.log(q / (1 - q)))


VARIANTS: dict[str, tuple[tuple[str, ...], Callable[[np.ndarray], np.ndarray] | None]] = {
    "network + cues (trained)": ((*PAIR_FEATURES, *CUE_FEATURES), None),
    "network + yes/no + cues (trained+llm)": ((*PAIR_FEATURES, "llm_true", "llm_false", *CUE_FEATURES), None),
    "network + yes/no + verdict + cues": ((*PAIR_FEATURES, *CUE_FEATURES, *LLM_COLUMNS), None),
    "network + yes/no + verdict + cues, logits": ((*PAIR_FEATURES, *CUE_FEATURES, *LLM_COLUMNS), logit),
    "network + yes/no + verdict, logits": ((*PAIR_FEATURES, *LLM_COLUMNS), logit),
    "LLM only: yes/no + verdict, logits": (("bias", *LLM_COLUMNS), logit),
    "LLM only: verdict, logits": (("bias", "verdict_agrees", "verdict_disagrees", "verdict_neither"), logit),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=Path("../shared/training"))
    parser.add_argument("--sets", default="calibration,dev,scifact0,covid0,handwritten")
    parser.add_argument("--l2", default="0.01,0.001")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cached-only", action="store_true", help="score on the pairs already computed, ask nothing")
    args = parser.parse_args()
    settings = load_settings()
    root = Path(__file__).resolve().parents[1]
    data = sets(args.shared, root)
    models = Models(settings)
    judge = TrainedStanceJudge(
        settings.models.stance_model_dir, stance_base_path(settings), threads=settings.models.llm_threads, fitting=True
    )
    judge.llm_judge = models.llm_questions()
    path = settings.paths.state_dir / "cache" / "stance_study.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    tag = f"{judge.artifact.sha256[:12]}:{judge.llm_judge.model_id}"
    cache: dict[str, list[float]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record.get("tag", tag) == tag:
                cache[record["key"]] = record["row"]
    if args.cached_only:  # the pairs computed so far (e.g. while a run is still going)
        data = {n: [p for i, p in enumerate(ps) if pair_key(n, p, i) in cache] for n, ps in data.items()}
        data = {n: ps for n, ps in data.items() if ps}
    wanted = [name for name in args.sets.split(",") if name in data]
    features = {name: compute(judge, name, data[name], cache, path, tag) for name in wanted}
    if "calibration" not in features:
        return
    report: list[dict[str, object]] = []
    evaluated = [name for name in ("dev", "scifact0", "covid0") if name in features]
    for variant, (names, transform) in VARIANTS.items():
        for extra in (False, True):
            if extra and "handwritten" not in features:
                continue
            fit_x = features["calibration"]
            fit_y = [p.label for p in data["calibration"]]
            if extra:
                fit_x = np.vstack([fit_x, features["handwritten"]])
                fit_y = [*fit_y, *(p.label for p in data["handwritten"])]
            for l2, balanced in ((float(x), b) for x in args.l2.split(",") for b in (False, True)):
                combiner = StanceCombiner.fit(
                    columns(fit_x, names, transform), fit_y, l2=l2, feature_names=names, balanced=balanced
                )
                row: dict[str, object] = {"variant": variant, "handwritten": extra, "l2": l2, "balanced": balanced}
                for name in evaluated:
                    probs = combiner.probability_rows(columns(features[name], names, transform))
                    row[name] = score(data[name], results_from_rows(probs, variant), variant, 1.0).model_dump()
                report.append(row)
    cascade = cascade_rows(features, data, evaluated, report)
    if args.json:
        print(json.dumps({"variants": report, "cascade": cascade}, indent=2))
        return
    heads = " | ".join(f"{n}: macro-F1 / recall S C N / swaps / ECE" for n in evaluated)
    print(f"| variant | + hand-written | L2 | balanced | {heads} |")
    print("| --- | --- | --- | --- | " + " | ".join("---" for _ in evaluated) + " |")
    for row in report:
        cells = []
        for name in evaluated:
            ev = row[name]
            assert isinstance(ev, dict)
            recall = " ".join(f"{ev['per_class'][lab]['recall']:.2f}" for lab in LABELS)
            cells.append(f"{ev['macro_f1']:.3f} / {recall} / {ev['swap_rate']:.0%} / {ev['ece']:.3f}")
        flags = f"{'yes' if row['handwritten'] else 'no'} | {row['l2']} | {'yes' if row['balanced'] else 'no'}"
        print(f"| {row['variant']} | {flags} | {' | '.join(cells)} |")


def columns(xs: np.ndarray, names: Sequence[str], transform: Callable[[np.ndarray], np.ndarray] | None) -> np.ndarray:
    """The ``names`` columns of feature rows (COLUMNS order; "bias" is the network features' column of ones), the
    LLM's probabilities passed through ``transform``."""
    picked = xs[:, [COLUMNS.index(n) for n in names]].copy()
    if transform is not None:
        llm = [i for i, n in enumerate(names) if n in LLM_COLUMNS]
        picked[:, llm] = transform(picked[:, llm])
    return picked


def mean_f1(row: dict[str, object], names: Sequence[str]) -> float:
    return float(np.mean([row[n]["macro_f1"] for n in names]))  # type: ignore[index]


def cascade_rows(
    features: dict[str, np.ndarray],
    data: dict[str, list[LabelledPair]],
    evaluated: Sequence[str],
    report: Sequence[dict[str, object]],
) -> list[dict[str, object]]:
    """The fast network's combiner answers where it is sure (its top probability at least ``t``); the rest go to
    the best LLM variant (by mean held-out macro-F1, without the hand-written pairs). The share of pairs sent to the
    LLM sets the speed."""
    llm_rows = [r for r in report if "llm" in str(r["variant"]).lower() or "verdict" in str(r["variant"])]
    best = max((r for r in llm_rows if not r["handwritten"]), key=lambda r: mean_f1(r, evaluated))
    plain_names, _ = VARIANTS["network + cues (trained)"]
    names, transform = VARIANTS[str(best["variant"])]
    fit_y = [p.label for p in data["calibration"]]
    l2 = float(best["l2"])  # type: ignore[arg-type]
    balanced = bool(best["balanced"])
    plain = StanceCombiner.fit(
        columns(features["calibration"], plain_names, None), fit_y, l2=l2, feature_names=plain_names, balanced=balanced
    )
    llm = StanceCombiner.fit(
        columns(features["calibration"], names, transform), fit_y, l2=l2, feature_names=names, balanced=balanced
    )
    out: list[dict[str, object]] = []
    for threshold in (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01):
        row: dict[str, object] = {"llm_variant": best["variant"], "threshold": threshold}
        cells: list[str] = []
        for name in evaluated:
            fast = plain.probability_rows(columns(features[name], plain_names, None))
            slow = llm.probability_rows(columns(features[name], names, transform))
            unsure = fast.max(axis=1) < threshold
            mixed = np.where(unsure[:, None], slow, fast)
            ev = score(data[name], results_from_rows(mixed, "cascade"), "cascade", 1.0).model_dump()
            row[name] = {"macro_f1": ev["macro_f1"], "ece": ev["ece"], "llm_share": float(unsure.mean())}
            cells.append(f"{name} {ev['macro_f1']:.3f} ({unsure.mean():.0%} to the LLM)")
        out.append(row)
        log(f"cascade t={threshold}: {' | '.join(cells)}")
    return out


if __name__ == "__main__":
    main()
