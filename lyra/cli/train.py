"""`lyra train ...`: produce the shipped model artifacts from labelled data (no Neo4j needed)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from lyra.cli.common import err, experiment_from_env, handle_errors, out, settings_from_env

# The trainer's choices, spelled out so that `lyra train --help` does not import it (numpy, torch); the unit test
# tests/unit/cli/test_cli_startup.py checks them against lyra.services.training and lyra.ml.stance_judge.
DEFAULT_LLM_FEATURES = "yes-no+verdict-logits"
LLM_FEATURE_SETS = ("yes-no", "yes-no+verdict", "yes-no+verdict-logits", "verdict-logits-only")
SENTENCE_SELECTORS = ("cosine", "rationale")

train_app = typer.Typer(help="Train the shipped models from labelled data.", no_args_is_help=True)

_DEFAULT_FILES = [
    Path("../shared/training/scifact_train.jsonl"),
    Path("../shared/training/check_covid_train.jsonl"),
]


@train_app.command("stance")
@handle_errors
def train_stance_command(
    files: list[Path] = typer.Argument(
        None, help="labelled JSONL files (shared schema); default: SciFact + Check-COVID train"
    ),
    output: Path | None = typer.Option(None, "--out", help="artifact folder (default: LYRA_STANCE_MODEL_DIR)"),
    epochs: int = typer.Option(3, min=1, max=50),
    learning_rate: float = typer.Option(1e-4, "--lr", min=1e-7, max=1.0),
    trainable_layers: int = typer.Option(3, min=1, max=12, help="top encoder layers that are trained"),
    max_length: int = typer.Option(96, min=16, max=512, help="tokens of claim + sentence"),
    seed: int = typer.Option(0),
    combiner_l2: float = typer.Option(0.01, min=0.0, max=10.0, help="L2 penalty of the combiners"),
    balanced: bool = typer.Option(
        True, "--balanced/--unbalanced", help="fit the combiners with each label weighing the same"
    ),
    no_negation: bool = typer.Option(False, "--no-negation", help="no rule-negated claims in training"),
    combiner_only: bool = typer.Option(False, "--combiner-only", help="keep the network, refit the combiner"),
    with_llm: bool = typer.Option(
        False, "--with-llm", help="also fit the combiner that reads the local LLM's answers (two questions a pair)"
    ),
    extra_calibration: list[Path] = typer.Option(
        [], "--calibration-extra", help="labelled JSONL added whole to the combiners' fitting pairs"
    ),
    llm_features: str = typer.Option(
        DEFAULT_LLM_FEATURES,
        "--llm-features",
        help=f"the LLM combiner's features: {', '.join(LLM_FEATURE_SETS)}",
    ),
    llm_per_label: int | None = typer.Option(
        None, min=5, help="fit the LLM combiner on the first N calibration pairs of each label (cost bound)"
    ),
    fever_pairs: int = typer.Option(
        0, min=0, help="FEVER pairs in a first, two-way training stage (auxiliary head; 0: no such stage)"
    ),
    fever_epochs: int = typer.Option(1, min=1, max=10),
    top_k_sentences: int = typer.Option(
        0, min=0, help="the judge reads only k sentences of a passage, see --sentence-selector (0: every sentence)"
    ),
    sentence_selector: str = typer.Option(
        "cosine",
        "--sentence-selector",
        help="how the top k sentences are chosen: cosine (embedding cosine to the claim) or rationale (a selector "
        "fitted on the training folds' rationale sentences)",
    ),
    max_rows: int = typer.Option(0, min=0, help="train on a seeded sample of this many rows (0: all)"),
    cache_frozen_layers: bool = typer.Option(
        False,
        "--cache-frozen-layers",
        help="run the frozen lower layers once per input and train only the top layers on their stored output "
        "(much faster for a large encoder; no dropout below the trained layers)",
    ),
    fever_file: Path = typer.Option(Path("../shared/training/fever_rte_dev.jsonl"), "--fever-file"),
) -> None:
    """Train the sentence-level stance network (claim folds 2-4) and fit its calibrated combiner (fold 1);
    fold 0 stays held out (`lyra eval nli --split heldout`). Writes manifest.json + stance_head.safetensors."""
    from lyra.services.training import TrainingConfig, train_stance_judge

    settings = settings_from_env()
    config = TrainingConfig(
        epochs=epochs,
        learning_rate=learning_rate,
        trainable_layers=trainable_layers,
        max_length=max_length,
        seed=seed,
        combiner_l2=combiner_l2,
        combiner_balanced=balanced,
        negation_augment=not no_negation,
        fever_pairs=fever_pairs,
        fever_epochs=fever_epochs,
        top_k_sentences=top_k_sentences,
        sentence_selector=sentence_selector,
        max_rows=max_rows,
        cache_frozen=cache_frozen_layers,
    )
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err, transient=True) as bar:
        tasks: dict[str, TaskID] = {}

        def tick(stage: str, advance: int, total: int | None) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.advance(tasks[stage], advance)

        summary = train_stance_judge(
            settings,
            files or _DEFAULT_FILES,
            output,
            config,
            combiner_only=combiner_only,
            with_llm=with_llm,
            tick=tick,
            llm_per_label=llm_per_label,
            extra_calibration=extra_calibration,
            llm_features=llm_features,
            fever=fever_file if fever_pairs else None,
            experiment=experiment_from_env(),
        )
    out.print(
        f"wrote {summary.output}: {summary.artifact_bytes / 1e6:.1f} MB, sha256 {summary.artifact_sha256[:16]}…; "
        f"{summary.rows} training rows, pairs by role {summary.pairs_by_role}, "
        f"epoch losses {[round(x, 3) for x in summary.epoch_losses]}, {summary.seconds:.0f} s"
    )


@train_app.command("stance-examples")
@handle_errors
def refit_stance_command(
    examples: Path = typer.Argument(..., help="labelled JSONL (Lyra's or the shared schema): the pairs to add"),
    output: Path = typer.Option(..., "--out", help="folder for the refitted copy of the artifact"),
    source: Path | None = typer.Option(None, "--from", help="artifact to start from (default: LYRA_STANCE_MODEL_DIR)"),
    weight: int = typer.Option(5, min=1, max=100, help="how many times each example counts in the fit"),
    with_llm: bool = typer.Option(False, "--with-llm", help="also refit the combiner that reads the LLM's answers"),
) -> None:
    """Refit the stance judge's combiners on the rows they were fitted on plus labelled examples (how approved
    reviewer examples reach the trained judge); the network is unchanged and only the examples' features are
    computed. Point LYRA_STANCE_MODEL_DIR at the output, measured with `lyra eval nli` before and after."""
    from lyra.services.training import refit_stance_judge

    settings = settings_from_env()
    summary = refit_stance_judge(settings, examples, output, source, weight=weight, with_llm=with_llm)
    out.print(
        f"wrote {summary.output}: {summary.examples} examples x{summary.weight} added to {', '.join(summary.combiners)}"
    )
