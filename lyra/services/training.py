"""`lyra train stance`: train the sentence-level stance network and fit its calibrated combiner, reproducibly.

Everything that decides the result is recorded in the artifact's manifest: the training files and their sha256,
the seed and hyper-parameters, the base encoder's sha256, the number of rows and pairs per role, and the hash of
the trained tensors (checked again at every load). Models load here directly: training needs no Neo4j.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from lyra.core.errors import InvalidInputError
from lyra.ml.evaluation import LabelledPair, load_pairs
from lyra.ml.stance_features import StanceCombiner
from lyra.ml.stance_judge import MANIFEST, TENSORS, StanceArtifact, load_network
from lyra.ml.stance_training import PAIR_FEATURES, Row, TrainingConfig, pair_features, role_of, sentence_rows
from lyra.ml.stance_training import sentences_of as _sentences
from lyra.ml.stance_training import train_network as _train_network

log = logging.getLogger(__name__)
Tick = Callable[[str, int, int | None], None]  # (stage, advance, total)


class TrainingSummary(BaseModel):
    output: str
    artifact_sha256: str
    artifact_bytes: int
    rows: int
    pairs_by_role: dict[str, int]
    epoch_losses: list[float]
    seconds: float
    combiner_pairs: int


def _sha256(path: Path) -> str:
    from lyra.ml.stance_net import sha256_of

    return sha256_of(path)


def _pairs_by_role(files: Sequence[Path]) -> dict[str, list[LabelledPair]]:
    roles: dict[str, list[LabelledPair]] = {"network": [], "calibration": [], "heldout": []}
    for path in files:
        for pair in load_pairs(path):
            roles[role_of(pair)].append(pair)
    return roles


def _pair_features(net: Any, pairs: Sequence[LabelledPair], max_length: int, tick: Tick | None) -> np.ndarray:
    claims: list[str] = []
    sentences: list[str] = []
    owners: list[int] = []
    for index, pair in enumerate(pairs):
        # the judge sees text only: split it the way the judge does, not by the data set's own sentences
        for sentence in _sentences(pair.model_copy(update={"sentences": []})):
            claims.append(pair.hypothesis)
            sentences.append(sentence)
            owners.append(index)
    probs = net.probabilities(claims, sentences, max_length)
    if tick is not None:
        tick("combiner features", len(pairs), len(pairs))
    owner = np.asarray(owners)
    return np.stack([pair_features(probs[owner == i]) for i in range(len(pairs))])


def fit_combiner(net: Any, pairs: Sequence[LabelledPair], max_length: int, tick: Tick | None) -> StanceCombiner:
    xs = _pair_features(net, pairs, max_length, tick)
    return StanceCombiner.fit(xs, [p.label for p in pairs], feature_names=PAIR_FEATURES)


def train_stance(
    files: Sequence[Path],
    output: Path,
    base: str,
    base_id: str,
    config: TrainingConfig,
    threads: int | None = None,
    combiner_only: bool = False,
    tick: Tick | None = None,
) -> TrainingSummary:
    """Train (or, with ``combiner_only``, only refit the combiner of) the stance judge in ``output``."""
    import torch
    from safetensors.torch import save_file

    from lyra.ml.stance_net import StanceNet, base_weights_file

    if not files:
        raise InvalidInputError("train", "give at least one labelled JSONL file")
    if threads:
        torch.set_num_threads(threads)
    started = time.perf_counter()
    roles = _pairs_by_role(files)
    for role in ("network", "calibration"):
        if not roles[role]:
            raise InvalidInputError("train", f"no pairs fall in the '{role}' folds of the given files")
    output.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    losses: list[float] = []
    manifest: dict[str, Any]
    if combiner_only:
        artifact = StanceArtifact.read(output)
        manifest = dict(artifact.manifest)
        net = load_network(artifact, base, threads)
    else:
        rows = sentence_rows(roles["network"], config)
        if tick is not None:
            tick("training", 0, config.epochs * len(rows))
        trained, losses = _train_network(
            rows, base, config, progress=None if tick is None else lambda n: tick("training", n, None)
        )
        assert isinstance(trained, StanceNet)
        net = trained
        tensors = {k: v.to(torch.float16).contiguous() for k, v in net.trained_tensors(config.trainable_layers).items()}
        tensor_path = output / TENSORS
        save_file(tensors, str(tensor_path))
        base_file = base_weights_file(Path(base)) if Path(base).exists() else None
        manifest = {
            "format": 1,
            "base": {"model": base_id, "sha256": _sha256(base_file) if base_file else ""},
            "artifact": {
                "file": TENSORS,
                "sha256": _sha256(tensor_path),
                "bytes": tensor_path.stat().st_size,
                "dtype": "float16",
            },
            "max_length": config.max_length,
            "training": {
                "config": config.as_dict(),
                "files": [{"name": p.name, "sha256": _sha256(p)} for p in files],
                "rows": len(rows),
                "row_labels": np.bincount([r.label for r in rows], minlength=3).tolist(),
                "epoch_losses": [round(x, 4) for x in losses],
                "torch": torch.__version__,
            },
        }
        # the combiner is fitted on what the shipped (float16) tensors give, not on the float32 training copy
        net = load_network(StanceArtifact(output, {**manifest, "combiner": {}}), base, threads)
    calibration = roles["calibration"]
    combiner = fit_combiner(net, calibration, int(manifest["max_length"]), tick)
    manifest["combiner"] = combiner.to_dict(
        f"fitted on {len(calibration)} pairs of the calibration fold (claim fold 1) of "
        + ", ".join(p.name for p in files)
    )
    manifest["pairs_by_role"] = {role: len(pairs) for role, pairs in roles.items()}
    (output / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    artifact_info = manifest["artifact"]
    return TrainingSummary(
        output=str(output),
        artifact_sha256=str(artifact_info["sha256"]),
        artifact_bytes=int(artifact_info["bytes"]),
        rows=len(rows),
        pairs_by_role={role: len(pairs) for role, pairs in roles.items()},
        epoch_losses=losses,
        seconds=time.perf_counter() - started,
        combiner_pairs=len(calibration),
    )
