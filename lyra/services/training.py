"""`lyra train stance`: train the sentence-level stance network and fit its calibrated combiner, reproducibly.

Everything that decides the result is recorded in the artifact's manifest: the training files and their sha256,
the seed and hyper-parameters, the base encoder's sha256, the number of rows and pairs per role, and the hash of
the trained tensors (checked again at every load). Models load here directly: training needs no Neo4j.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from lyra.core.errors import InvalidInputError
from lyra.core.settings import ExperimentSettings, Settings
from lyra.ml.evaluation import LabelledPair, load_pairs
from lyra.ml.factory import Models, stance_base_path
from lyra.ml.nli import LLMStanceJudge
from lyra.ml.sentence_selector import SELECTORS, Embed, fit_selector, selector_file
from lyra.ml.stance_features import StanceCombiner
from lyra.ml.stance_judge import (
    EXAMPLE_WEIGHT,
    LLM_FEATURE_SETS,
    MANIFEST,
    PLAIN_FEATURES,
    TENSORS,
    StanceArtifact,
    TrainedStanceJudge,
    label_indices,
    load_fit_rows,
    refit_combiner,
    save_fit_rows,
)
from lyra.ml.stance_training import (
    Row,
    TrainingConfig,
    distinct_inputs,
    fever_rows,
    first_per_label,
    role_of,
    sentence_rows,
)
from lyra.ml.stance_training import train_network as _train_network
from lyra.ml.weights import sha256_file

__all__ = [
    "DEFAULT_LLM_FEATURES",
    "LLM_FEATURE_SETS",
    "TrainingConfig",
    "TrainingSummary",
    "refit_stance_judge",
    "train_stance",
    "train_stance_judge",
]

log = logging.getLogger(__name__)
Tick = Callable[[str, int, int | None], None]  # (stage, advance, total)
# the LLM combiner's features, chosen on held-out real pairs (docs/evaluation/stance-quality.md)
DEFAULT_LLM_FEATURES = "yes-no+verdict-logits"


class TrainingSummary(BaseModel):
    output: str
    artifact_sha256: str
    artifact_bytes: int
    rows: int
    pairs_by_role: dict[str, int]
    epoch_losses: list[float]
    seconds: float
    combiner_pairs: int


def _pairs_by_role(files: Sequence[Path]) -> dict[str, list[LabelledPair]]:
    roles: dict[str, list[LabelledPair]] = {"network": [], "calibration": [], "heldout": []}
    for path in files:
        for pair in load_pairs(path):
            roles[role_of(pair)].append(pair)
    return roles


def pair_feature_rows(
    judge: TrainedStanceJudge,
    pairs: Sequence[LabelledPair],
    stage: str,
    tick: Tick | None,
    names: Sequence[str] = PLAIN_FEATURES,
    batch: int = 16,
) -> np.ndarray:
    """The combiner's inputs for labelled pairs, computed exactly as the judge computes them at run time."""
    rows: list[np.ndarray] = []
    if tick is not None:
        tick(stage, 0, len(pairs))
    for first in range(0, len(pairs), batch):
        chunk = pairs[first : first + batch]
        rows.append(judge.features([(p.premise, p.hypothesis) for p in chunk], names))
        if tick is not None:
            tick(stage, len(chunk), None)
    return np.concatenate(rows)


class RefitSummary(BaseModel):
    output: str
    examples: int
    weight: int
    combiners: list[str]


def refit_with_examples(
    source: Path,
    output: Path,
    examples: Sequence[LabelledPair],
    base: str,
    llm_judge: LLMStanceJudge | None,
    weight: int = EXAMPLE_WEIGHT,
    threads: int | None = None,
    embed: Embed | None = None,
) -> RefitSummary:
    """A copy of the artifact in ``source`` whose combiners are refitted on their kept rows plus ``examples``
    (each counted ``weight`` times): how approved reviewer examples reach the trained judge (the learning loop's
    deploy step). Only the examples' features are computed (asking the LLM for them when the artifact has an LLM
    combiner and ``llm_judge`` is given); the network itself is unchanged. ``embed``: the embedder an artifact that
    reads only its top-k sentences chooses them with (the one the judge is given at run time)."""
    if not examples:
        raise InvalidInputError("examples", "give at least one labelled pair to add to the fit")
    if weight < 1:
        raise InvalidInputError("weight", "must be at least 1")
    artifact = StanceArtifact.read(source)
    rows, l2, balanced = load_fit_rows(artifact)
    output.mkdir(parents=True, exist_ok=True)
    # the files the copy keeps as they are: the network's tensors and its sentence selector (when it has one)
    kept = [str(artifact.manifest["artifact"].get("file", TENSORS))]
    if selector := selector_file(artifact.manifest.get("sentence_selector")):
        kept.append(selector)
    if output.resolve() != source.resolve():
        for name in kept:
            shutil.copyfile(source / name, output / name)
    judge = TrainedStanceJudge(source, base, threads=threads, fitting=True, llm_judge=llm_judge, embed=embed)
    manifest = dict(artifact.manifest)
    pairs = [(p.premise, p.hypothesis) for p in examples]
    labels = [p.label for p in examples]
    refitted: list[str] = []
    for key in ("combiner", "combiner_llm"):
        if f"{key}_x" not in rows or key not in manifest or (key == "combiner_llm" and llm_judge is None):
            continue
        names = tuple(manifest[key]["features"])
        combiner, rows[f"{key}_x"], rows[f"{key}_y"] = refit_combiner(
            rows, l2, key, names, judge.features(pairs, names), labels, weight, balanced
        )
        note = f"{manifest[key].get('note', '')}; refitted with {len(examples)} reviewer examples x{weight}"
        manifest[key] = combiner.to_dict(note)
        refitted.append(key)
    manifest["fit_data"] = save_fit_rows(output, rows, l2, balanced)
    manifest["learned_examples"] = {"count": len(examples), "weight": weight, "from": str(source)}
    (output / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return RefitSummary(output=str(output), examples=len(examples), weight=weight, combiners=refitted)


def refit_stance_judge(
    settings: Settings,
    examples: Path,
    output: Path,
    source: Path | None = None,
    weight: int = EXAMPLE_WEIGHT,
    with_llm: bool = False,
) -> RefitSummary:
    """:func:`refit_with_examples` with the models ``settings`` name (`lyra train stance-examples`)."""
    models = Models(settings)
    return refit_with_examples(
        source or settings.models.stance_model_dir,
        output,
        load_pairs(examples),
        stance_base_path(settings),
        models.llm_questions() if with_llm else None,
        weight=weight,
        threads=settings.models.llm_threads,
        embed=lambda texts: models.embedder.embed(texts),
    )


def train_stance_judge(
    settings: Settings,
    files: Sequence[Path],
    output: Path | None,
    config: TrainingConfig,
    combiner_only: bool = False,
    with_llm: bool = False,
    tick: Tick | None = None,
    llm_per_label: int | None = None,
    extra_calibration: Sequence[Path] = (),
    llm_features: str = DEFAULT_LLM_FEATURES,
    fever: Path | None = None,
    experiment: ExperimentSettings | None = None,
) -> TrainingSummary:
    """:func:`train_stance` with the base encoder, threads and (``with_llm``) the LLM that ``settings`` name;
    ``experiment``: the LLM prompt's variant switches (e.g. the claim-first layout; none: the shipped prompt)."""
    base_id = settings.models.stance_base_model
    if base_id.startswith("builtin:"):
        base_id = "sentence-transformers/" + base_id.removeprefix("builtin:")
    return train_stance(
        files,
        output or settings.models.stance_model_dir,
        stance_base_path(settings),
        base_id,
        config,
        fever=fever,
        threads=settings.models.llm_threads,
        combiner_only=combiner_only,
        llm_judge=Models(settings, experiment=experiment).llm_questions() if with_llm else None,
        tick=tick,
        llm_per_label=llm_per_label,
        extra_calibration=extra_calibration,
        llm_features=llm_features,
    )


def sentence_selector_entry(
    output: Path, network_pairs: Sequence[LabelledPair], config: TrainingConfig, embed: Embed | None
) -> dict[str, Any]:
    """The manifest entry of the sentence selector ``config`` names; the rationale selector is fitted here on the
    rationale sentences of the network folds' pairs that have them (never the calibration or held-out folds) and
    written into ``output`` with its sha256."""
    if config.sentence_selector == "cosine" or embed is None:
        return {"kind": "cosine"}
    passages = [(p.hypothesis, p.sentences, p.rationale) for p in network_pairs if p.rationale and p.sentences]
    if not passages:
        raise InvalidInputError(
            "sentence_selector", "no pair of the network folds has rationale sentences to fit it on"
        )
    selector = fit_selector(passages, embed)
    note = f"fitted on the rationale sentences of {len(passages)} pairs of the network folds (claim folds 2-4)"
    return selector.write(output, note)


def train_stance(
    files: Sequence[Path],
    output: Path,
    base: str,
    base_id: str,
    config: TrainingConfig,
    threads: int | None = None,
    combiner_only: bool = False,
    llm_judge: LLMStanceJudge | None = None,
    tick: Tick | None = None,
    llm_per_label: int | None = None,
    extra_calibration: Sequence[Path] = (),
    llm_features: str = DEFAULT_LLM_FEATURES,
    fever: Path | None = None,
) -> TrainingSummary:
    """Train (or, with ``combiner_only``, only refit the combiner of) the stance judge in ``output``; with
    ``llm_judge`` also fit the combiner that reads the LLM's answers (slow: two LLM questions per pair), on the
    first ``llm_per_label`` calibration pairs of each label when given. ``extra_calibration`` files are added whole
    to the combiners' fitting pairs (never to the network's). ``llm_features`` names the LLM combiner's feature set
    (:data:`LLM_FEATURE_SETS`). ``fever`` (with ``config.fever_pairs``): the two-way FEVER file of the first stage."""
    import torch
    from safetensors.torch import save_file

    from lyra.ml.stance_net import base_weights_file

    if not files:
        raise InvalidInputError("train", "give at least one labelled JSONL file")
    if llm_features not in LLM_FEATURE_SETS:
        raise InvalidInputError(
            "llm_features", f"unknown feature set {llm_features!r}; use one of {sorted(LLM_FEATURE_SETS)}"
        )
    if config.sentence_selector not in SELECTORS:
        raise InvalidInputError(
            "sentence_selector", f"unknown selector {config.sentence_selector!r}; use one of {list(SELECTORS)}"
        )
    if config.sentence_selector == "rationale" and not config.top_k_sentences:
        raise InvalidInputError(
            "sentence_selector", "the rationale selector chooses the top k sentences: give top_k_sentences >= 1"
        )
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
        manifest = dict(StanceArtifact.read(output).manifest)
    else:
        rows = sentence_rows(roles["network"], config)
        first: list[Row] = []
        if config.fever_pairs:
            if fever is None:
                raise InvalidInputError("fever", "a FEVER first stage needs the FEVER file")
            first = fever_rows(fever, config.fever_pairs, config.seed)
        if tick is not None:
            if config.cache_frozen:
                tick("frozen layers", 0, len(distinct_inputs([*first, *rows])))
            tick("training", 0, config.epochs * len(rows) + config.fever_epochs * len(first))
        trained, losses = _train_network(
            rows,
            base,
            config,
            progress=None if tick is None else lambda n: tick("training", n, None),
            first_stage=first,
            cache_progress=None if tick is None else lambda n: tick("frozen layers", n, None),
        )
        tensors = {
            k: v.to(torch.float16).contiguous() for k, v in trained.trained_tensors(config.trainable_layers).items()
        }
        tensor_path = output / TENSORS
        save_file(tensors, str(tensor_path))
        base_file = base_weights_file(Path(base)) if Path(base).exists() else None
        manifest = {
            "format": 1,
            "base": {"model": base_id, "sha256": sha256_file(base_file) if base_file else ""},
            "artifact": {
                "file": TENSORS,
                "sha256": sha256_file(tensor_path),
                "bytes": tensor_path.stat().st_size,
                "dtype": "float16",
            },
            "max_length": config.max_length,
            "training": {
                "config": config.as_dict(),
                "files": [
                    {"name": p.name, "sha256": sha256_file(p)} for p in [*files, *([fever] if fever and first else [])]
                ],
                "first_stage_rows": len(first),
                "rows": len(rows),
                "row_labels": np.bincount([r.label for r in rows], minlength=3).tolist(),
                "epoch_losses": [round(x, 4) for x in losses],
                "torch": torch.__version__,
            },
        }
        (output / MANIFEST).write_text(json.dumps({**manifest, "combiner": {}}, indent=2) + "\n", encoding="utf-8")
    # the combiners are fitted on what the shipped (float16) tensors give, not on the float32 training copy
    extra = [pair for path in extra_calibration for pair in load_pairs(path)]
    calibration = roles["calibration"]
    labels = [p.label for p in calibration] + [p.label for p in extra]
    sources = ", ".join(p.name for p in files) + "".join(f" + all of {p.name}" for p in extra_calibration)
    l2 = f"L2 {config.combiner_l2}" + (", labels balanced" if config.combiner_balanced else "")
    note = f"fitted on {len(labels)} pairs: the calibration fold (claim fold 1) of {sources}; {l2}"
    manifest["top_k_sentences"] = config.top_k_sentences
    embed = None
    if config.top_k_sentences:
        from lyra.ml.embedder import BUILTIN_MINILM, SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(BUILTIN_MINILM, threads=threads or 2)
        embed = embedder.embed
    manifest["sentence_selector"] = sentence_selector_entry(output, roles["network"], config, embed)
    (output / MANIFEST).write_text(json.dumps({**manifest, "combiner": {}}, indent=2) + "\n", encoding="utf-8")
    judge = TrainedStanceJudge(output, base, threads=threads, fitting=True, embed=embed)
    xs = pair_feature_rows(judge, [*calibration, *extra], "combiner", tick)
    manifest["combiner"] = StanceCombiner.fit(
        xs, labels, l2=config.combiner_l2, feature_names=PLAIN_FEATURES, balanced=config.combiner_balanced
    ).to_dict(note)
    fit_rows: dict[str, np.ndarray] = {"combiner_x": xs, "combiner_y": label_indices(labels)}
    if llm_judge is not None:
        judge.llm_judge = llm_judge
        # a seeded shuffle first, so a bounded sample mixes the data sets the way the whole fold does
        mixed = random.Random(config.seed).sample(calibration, len(calibration))
        chosen = [*(first_per_label(mixed, llm_per_label) if llm_per_label else calibration), *extra]
        names = LLM_FEATURE_SETS[llm_features]
        xs = pair_feature_rows(judge, chosen, "combiner with the LLM", tick, names)
        combiner = StanceCombiner.fit(
            xs, [p.label for p in chosen], l2=config.combiner_l2, feature_names=names, balanced=config.combiner_balanced
        )
        sample = f" ({llm_per_label} of each label, seeded sample)" if llm_per_label else ""
        added = "".join(f" + all of {p.name}" for p in extra_calibration)
        note_llm = (
            f"fitted on {len(chosen)} pairs: the calibration fold{sample}{added}; {l2}; features {llm_features}; "
            f"LLM {llm_judge.model_id}"
        )
        manifest["combiner_llm"] = combiner.to_dict(note_llm)
        fit_rows.update(combiner_llm_x=xs, combiner_llm_y=label_indices([p.label for p in chosen]))
    elif "combiner_llm" in manifest and combiner_only:
        manifest.pop("fit_data", None)  # the kept LLM combiner's rows are not refitted here: keep nothing stale
    manifest["pairs_by_role"] = {role: len(pairs) for role, pairs in roles.items()}
    if llm_judge is not None or "combiner_llm" not in manifest:
        manifest["fit_data"] = save_fit_rows(output, fit_rows, config.combiner_l2, config.combiner_balanced)
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
        combiner_pairs=len(labels),
    )
