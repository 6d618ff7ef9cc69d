"""Measuring and fitting the stance judge, and measuring Stage 2 of citation expansion, on labelled pairs
(`lyra eval ...`).

Models load here, not through a graph connection: evaluation needs no Neo4j.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np

from lyra.core.errors import ConfigError
from lyra.core.settings import ExperimentSettings, Settings
from lyra.ml.evaluation import HELD_OUT_FOLD, LabelledPair, NLIEvaluation, claim_fold, evaluate, load_pairs
from lyra.ml.factory import JUDGE_VARIANTS, Models, judge_settings
from lyra.ml.nli import LLMStanceJudge
from lyra.ml.protocols import LABELS
from lyra.ml.stance_features import StanceCombiner
from lyra.ml.stance_training import first_per_label, role_of
from lyra.ml.usefulness import (
    RATERS,
    MemoEmbedder,
    RaterEvaluation,
    build_rater,
    evaluate_rater,
    load_usefulness_pairs,
    select_pairs,
)

__all__ = [
    "JUDGE_VARIANTS",
    "LABELS",
    "RATERS",
    "NLIEvaluation",
    "RaterEvaluation",
    "Split",
    "evaluate_judge",
    "evaluate_usefulness",
    "fit_stance_combiner",
    "judge_settings",
]

Split = Literal["all", "dev", "test", "fit", "heldout"]
Tick = Callable[[int], None]


def _split(pairs: list[LabelledPair], split: Split) -> list[LabelledPair]:
    """dev = even lines, test = odd lines of the file (Lyra's small hand-written set); heldout = pairs whose claim
    falls in the held-out fold (by claim, see :func:`claim_fold`), fit = the other folds; all = every line."""
    if split == "all":
        return pairs
    if split in ("fit", "heldout"):
        return [p for p in pairs if (claim_fold(p.hypothesis) == HELD_OUT_FOLD) == (split == "heldout")]
    return [p for i, p in enumerate(pairs) if (i % 2 == 0) == (split == "dev")]


def evaluate_usefulness(
    settings: Settings,
    dataset: Path,
    raters: list[str],
    split: str = "test",
    per_label: dict[str, int] | None = None,
    progress: Tick | None = None,
) -> list[RaterEvaluation]:
    """AUCs of each Stage-2 rater in ``raters`` on the same pairs of ``dataset`` (``split``: test, dev or all;
    ``per_label``: the first N pairs of each label, for the slow LLM raters). The ranker uses the configured
    ``LYRA_RANK_*`` weights; LLM raters read the base prompts (no learned rules)."""
    from lyra.ml.ranking import CandidateRanker

    if split not in ("test", "dev", "all"):
        raise ConfigError(f"unknown split {split!r}; choose test, dev or all")
    pairs = select_pairs(load_usefulness_pairs(dataset), split, per_label)
    models = Models(settings)
    ranker = CandidateRanker(
        settings.pipeline.rank_bm25_top_n, settings.pipeline.rank_weight_bm25, settings.pipeline.rank_weight_embedding
    )
    results = []
    for name in raters:
        rater = build_rater(
            name,
            MemoEmbedder(models.embedder),  # a fresh one per rater: each embeds each distinct text once
            lambda: models.llm,
            settings.paths.prompts_dir,
            ranker=ranker,
            abstract_chars=settings.academic.citation_abstract_chars,
        )
        if rater is None:  # pragma: no cover - Models always builds an LLM
            raise ConfigError(f"rater {name} needs an LLM and none is configured")
        if pairs:
            rater.rate([pairs[0].paper()], [pairs[0].claim])  # load the model outside the timed run
        results.append(evaluate_rater(rater, pairs, progress=progress))
    return results


def evaluate_judge(
    settings: Settings,
    dataset: Path,
    split: Split = "all",
    limit: int | None = None,
    progress: Tick | None = None,
    per_label: int | None = None,
    experiment: ExperimentSettings | None = None,
) -> NLIEvaluation:
    """Accuracy, macro-F1, confusion, Brier and ECE of the judge ``settings`` configure, on ``dataset``.
    ``per_label``: only the first N pairs of each gold label (in file order), a balanced sample."""
    pairs = _split(load_pairs(dataset), split)
    if per_label:
        pairs = first_per_label(pairs, per_label)
    pairs = pairs[:limit] if limit else pairs
    judge = Models(settings, experiment=experiment).nli
    return evaluate(judge, pairs, progress=progress)


def fit_stance_combiner(
    settings: Settings,
    dataset: Path | None,
    train: list[Path],
    output: Path,
    progress: Tick | None = None,
    role: str | None = None,
    experiment: ExperimentSettings | None = None,
) -> int:
    """Fit the hybrid judge's combiner on the training files plus the DEV half of ``dataset`` (when given; its test
    half stays held out). With ``role`` only the training pairs of that protocol role are used (``calibration``:
    the claim fold that no network was trained on). Writes ``output`` and returns the number of pairs past the
    relevance gate."""
    two_questions = (experiment or ExperimentSettings()).model_copy(update={"stance_mode": "two_question"})
    judge = Models(settings.model_copy(update={"nli_backend": "llm"}), experiment=two_questions).nli
    if not isinstance(judge, LLMStanceJudge):
        raise ConfigError("fitting the stance combiner needs the LLM stance judge (LYRA_NLI_BACKEND=llm)")
    pairs = _split(load_pairs(dataset), "dev") if dataset is not None else []
    used = [t for t in train if t.exists()]
    for extra in used:
        pairs.extend(p for p in load_pairs(extra) if role is None or role_of(p) == role)
    xs: list[Any] = []
    labels: list[str] = []
    for pair in pairs:
        x, _ = judge.hybrid_features(pair.premise, pair.hypothesis)
        if progress is not None:
            progress(1)
        if len(x):  # pairs stopped by the relevance gate never reach the combiner
            xs.append(x)
            labels.append(pair.label)
    combiner = StanceCombiner.fit(np.asarray(xs), labels)
    named = [f"{t.name} ({role} fold)" if role else t.name for t in used]
    sources = ", ".join([f"{dataset.name} (even lines)", *named] if dataset is not None else named)
    combiner.save(
        output, f"fitted on {len(xs)} pairs past the relevance gate from {sources}, with {judge.llm.model_id}"
    )
    return len(xs)
