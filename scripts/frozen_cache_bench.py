"""Benchmark: what `lyra train stance --cache-frozen-layers` saves, measured side by side in one process.

For each encoder, on the same training rows (the network folds' rows of the training files, as `lyra train stance`
builds them), it times one epoch of the training code's own stage (every layer runs forward, the top layers
backward), running the frozen layers once to store their output, and one epoch of the same stage on the stored
output. Prints
rows/s for each and the epoch-cost ratio; "epochs to break even" is how many epochs pay for the one-off run.

    python scripts/frozen_cache_bench.py [--rows 256] [--trainable-layers 3] [--max-length 128]
                                         [--base minilm --base mpnet]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from lyra.core.settings import load_settings
from lyra.ml.evaluation import load_pairs
from lyra.ml.stance_training import TrainingConfig, role_of, run_stage, sentence_rows, store_frozen_states
from lyra.ml.weights import assembled_mpnet, builtin_minilm_path


def _base(name: str) -> str:
    if name == "minilm":
        return str(builtin_minilm_path())
    if name == "mpnet":
        return str(assembled_mpnet(load_settings().paths.models_dir))
    return name  # a folder


def measure(base: str, rows_wanted: int, trainable: int, max_length: int) -> dict[str, float]:
    import torch

    from lyra.ml.stance_net import StanceNet

    shared = Path("../shared/training")
    pairs = [
        p
        for name in ("scifact_train.jsonl", "check_covid_train.jsonl")
        for p in load_pairs(shared / name)
        if role_of(p) == "network"
    ]
    config = TrainingConfig(max_length=max_length, trainable_layers=trainable)
    rows = sentence_rows(pairs, config)[:rows_wanted]
    torch.manual_seed(0)
    net = StanceNet(base)
    net.freeze_below(trainable)
    # one epoch of the training code's own stage, once on the full pass and once on the stored frozen output
    started = time.perf_counter()
    run_stage(net, net.head, rows, 3, 1, config, random.Random(0), None, "plain")
    plain = time.perf_counter() - started
    started = time.perf_counter()
    states = store_frozen_states(net, rows, config, None)
    caching = time.perf_counter() - started
    started = time.perf_counter()
    run_stage(net, net.head, rows, 3, 1, config, random.Random(0), None, "stored", states)
    cached = time.perf_counter() - started
    return {
        "rows": float(len(rows)),
        "layers": float(net.layer_count),
        "plain_rows_per_s": len(rows) / plain,
        "caching_rows_per_s": len(rows) / caching,
        "cached_rows_per_s": len(rows) / cached,
        "epoch_cost_ratio": cached / plain,
        "epochs_to_break_even": caching / max(plain - cached, 1e-9),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--trainable-layers", type=int, default=3)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--base", action="append", help="minilm, mpnet or a folder (repeatable)")
    args = parser.parse_args()
    print(
        "| encoder | layers | rows | training rows/s | frozen run rows/s | training on stored rows/s | epoch cost | "
        "epochs to break even |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.base or ["minilm", "mpnet"]:
        m = measure(_base(name), args.rows, args.trainable_layers, args.max_length)
        print(
            f"| {name} | {m['layers']:.0f} | {m['rows']:.0f} | {m['plain_rows_per_s']:.2f} | "
            f"{m['caching_rows_per_s']:.2f} | {m['cached_rows_per_s']:.2f} | {m['epoch_cost_ratio']:.2f}× | "
            f"{m['epochs_to_break_even']:.2f} |",
            flush=True,
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
