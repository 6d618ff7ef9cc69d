"""`lyra eval ...`: measure and fit the stance judge on labelled pairs (no Neo4j needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.progress import Progress
from rich.table import Table

from lyra.cli.common import err, experiment_from_env, handle_errors, out, settings_from_env

if TYPE_CHECKING:  # the evaluation (numpy, the models) is imported where used: `lyra --help` stays fast
    from lyra.services.evaluation import Split

eval_app = typer.Typer(help="Measure the models on labelled data.", no_args_is_help=True)


@eval_app.command("fit-stance")
@handle_errors
def eval_fit_stance(
    dataset: Path = typer.Option(Path("config/eval/nli_stance_set.jsonl"), "--set", help="labelled JSONL"),
    train: list[Path] = typer.Option(
        [Path("config/eval/nli_stance_train.jsonl")], "--train", help="extra training JSONL, used whole"
    ),
    output: Path = typer.Option(Path("config/stance_combiner.json"), "--out"),
    no_set: bool = typer.Option(False, "--no-set", help="fit on the --train files alone"),
    role: str | None = typer.Option(
        None, help="only the --train pairs of this protocol role: calibration (claim fold 1) or network (folds 2-4)"
    ),
) -> None:
    """Fit the hybrid stance judge's combiner on the training set(s) plus the DEV half (even lines) of the
    evaluation set; the test half (odd lines) stays held out."""
    if role not in (None, "calibration", "network"):
        raise typer.BadParameter("must be calibration or network", param_hint="--role")
    from lyra.services.evaluation import fit_stance_combiner

    settings = settings_from_env()
    experiment = experiment_from_env()
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("features", total=None)
        count = fit_stance_combiner(
            settings,
            None if no_set else dataset,
            train,
            output,
            progress=lambda n: bar.advance(task, n),
            role=role,
            experiment=experiment,
        )
    out.print(f"wrote {output} ({count} training pairs)")


@eval_app.command("nli")
@handle_errors
def eval_nli(
    dataset: Path = typer.Option(Path("config/eval/nli_stance_set.jsonl"), "--set", help="labelled JSONL"),
    limit: int | None = typer.Option(None, min=1, help="only the first N pairs"),
    per_label: int | None = typer.Option(None, min=1, help="only the first N pairs of each gold label"),
    split: str = typer.Option(
        "all",
        help="all | dev (even lines) | test (odd lines) | heldout (claims in the held-out fold) | fit (other folds)",
    ),
    mode: str | None = typer.Option(None, help="override LYRA_STANCE_MODE: hybrid | two_question | three_way"),
    judge: str | None = typer.Option(
        None, help="a named judge: trained | trained+llm | llm | llm-two-question | llm-three-way"
    ),
    no_gate: bool = typer.Option(False, "--no-gate", help="disable the relevance gate"),
    whole_premise: bool = typer.Option(False, "--whole-premise", help="show the whole premise to the judge"),
    no_calibration: bool = typer.Option(False, "--no-calibration"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Accuracy, macro-F1, confusion matrix and calibration (Brier, ECE) of the configured NLI judge."""
    splits: dict[str, Split] = {"all": "all", "dev": "dev", "test": "test", "fit": "fit", "heldout": "heldout"}
    if split not in splits:
        raise typer.BadParameter(f"must be one of {', '.join(splits)}", param_hint="--split")
    chosen = splits[split]
    from lyra.services.evaluation import LABELS, evaluate_judge, judge_settings

    settings = settings_from_env()
    experiment = experiment_from_env(stance_mode=mode, stance_calibrate=False if no_calibration else None)
    if no_gate:
        settings = settings.model_copy(update={"stance_relevance_gate": None})
    if whole_premise:
        experiment = experiment.model_copy(update={"stance_premise_sentences": None})
    if judge is not None:
        settings, experiment = judge_settings(settings, judge, experiment)
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("judging", total=None)
        result = evaluate_judge(
            settings,
            dataset,
            chosen,
            limit,
            progress=lambda n: bar.advance(task, n),
            per_label=per_label,
            experiment=experiment,
        )
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    out.print(f"judge: {result.judge}   pairs: {result.pairs}   {result.pairs_per_second:.2f} pairs/s")
    out.print(
        f"accuracy {result.accuracy:.3f}   macro-F1 {result.macro_f1:.3f}   "
        f"Brier {result.brier:.3f}   ECE {result.ece:.3f}   "
        f"support<->contradict swaps {result.swap_rate:.1%} of directional pairs"
    )
    out.print(
        f"mean confidence: right answers {result.mean_confidence_right:.3f}, "
        f"wrong answers {result.mean_confidence_wrong:.3f}"
    )
    table = Table("gold \\ predicted", *LABELS, "recall", "precision", "F1")
    for label, row in zip(LABELS, result.confusion, strict=True):
        pc = result.per_class[label]
        table.add_row(label, *map(str, row), f"{pc['recall']:.2f}", f"{pc['precision']:.2f}", f"{pc['f1']:.2f}")
    out.print(table)
    out.print(f"decided by: {result.by_method}")
    out.print(f"split: {split}  (the hybrid judge is fitted on the training set and the dev split; report test)")
    if result.errors_by_kind:
        out.print(
            "most frequent errors (gold->predicted:kind): "
            + ", ".join(f"{k} x{v}" for k, v in list(result.errors_by_kind.items())[:8]),
            highlight=False,
        )


_TRAINING = Path("../shared/training")


@eval_app.command("relevance-floor")
@handle_errors
def eval_relevance_floor(
    fit: list[Path] = typer.Option([], "--fit", help="labelled JSONL to fit on (repeat for more)"),
    heldout: list[Path] = typer.Option([], "--heldout", help="labelled JSONL, measured only"),
    by_claim: list[Path] = typer.Option(
        [], "--by-claim", help="labelled JSONL split by claim: fold 0 measured only, the other folds fit on"
    ),
    target: float = typer.Option(0.98, min=0.01, max=1.0, help="share of relevant fit passages the floor keeps"),
    floor: float | None = typer.Option(None, help="measure this floor instead of fitting one"),
    w_emb: float | None = typer.Option(
        None, min=0.0, help="embedding weight (default LYRA_RELEVANCE_WEIGHT_EMBEDDING)"
    ),
    w_terms: float | None = typer.Option(None, min=0.0, help="claim-word weight (default LYRA_RELEVANCE_WEIGHT_TERMS)"),
    per_claim: int = typer.Option(5, min=0, help="off-topic passages drawn per claim"),
    seed: int = typer.Option(0, help="seed of the off-topic draw"),
    limit: int | None = typer.Option(None, min=1, help="only the first N lines of each file"),
    output: Path | None = typer.Option(None, "--json", help="also write the report as JSON here"),
) -> None:
    """Fit the relevance floor on labelled claim/abstract sets and measure it on held-out ones: recall of the
    passages that carry a verdict, share of NEI passages kept, share of random off-topic passages dropped.

    Without any file option: fit on Check-COVID train and SciFact train's claim folds 1-4, measure on Check-COVID
    dev and SciFact train's claim fold 0 (../shared/training/)."""
    if not (fit or heldout or by_claim):
        fit = [_TRAINING / "check_covid_train.jsonl"]
        heldout = [_TRAINING / "check_covid_dev.jsonl"]
        by_claim = [_TRAINING / "scifact_train.jsonl"]
    from lyra.services.relevance_floor import relevance_floor_report

    settings = settings_from_env()
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("embedding", total=None)
        report = relevance_floor_report(
            settings,
            fit,
            heldout,
            by_claim,
            target=target,
            floor=floor,
            w_emb=w_emb,
            w_terms=w_terms,
            per_claim=per_claim,
            seed=seed,
            limit=limit,
            progress=lambda n: bar.advance(task, n),
        )
    how = f"fitted for recall >= {report.target_recall:.2f} on the fit sets" if report.fitted else "given"
    out.print(
        f"relevance = {report.w_emb:g} * cosine + {report.w_terms:g} * claim-word overlap ({report.embedder}, "
        f"passages of <= {report.chunk_max_chars} chars)",
        highlight=False,
    )
    out.print(f"floor {report.floor:.2f} ({how}; exact {report.floor_exact:.4f})", highlight=False)
    table = Table(
        "set",
        "role",
        "claims",
        "relevant",
        "recall",
        "cited recall",
        "other kept",
        "NEI",
        "NEI kept",
        "off-topic",
        "off-topic dropped",
        "pairs/s",
    )
    for s in report.sets:
        table.add_row(
            s.name,
            s.role,
            str(s.claims),
            str(s.relevant_pairs),
            f"{s.recall:.3f}",
            f"{s.cited_recall:.3f}",
            f"{s.other_kept:.3f}",
            str(s.nei_pairs),
            f"{s.nei_kept:.3f}",
            str(s.offtopic_pairs),
            f"{s.offtopic_dropped:.3f}",
            f"{s.pairs_per_second:,.0f}",
        )
    out.print(table)
    out.print(
        "recall: relevant (claim, passage-with-a-rationale-sentence) pairs kept; cited recall: (claim, cited "
        "SUPPORT/CONTRADICT abstract) pairs with at least one such passage kept; pairs/s: scoring with the embeddings "
        f"in hand; embedding {report.texts_embedded} claims and passages took {report.embed_seconds:.1f} s "
        f"({report.texts_embedded / max(report.embed_seconds, 1e-9):.0f}/s)",
        highlight=False,
    )
    held = [s for s in report.sets if s.role == "heldout"]
    if held:
        columns = [f"{s.name}: {figure}" for s in held for figure in ("recall", "off-topic dropped")]
        others = Table("floor", *columns, title="other floors on the held-out sets")
        for i, point in enumerate(held[0].other_floors):
            cells = [f"{v:.3f}" for s in held for v in (s.other_floors[i].recall, s.other_floors[i].offtopic_dropped)]
            others.add_row(f"{point.floor:.2f}", *cells)
        out.print(others)
    if report.weight_grid:
        grid = Table("w_emb", "w_terms", "fitted floor", "off-topic dropped", title="weights on the fit sets")
        for row in report.weight_grid:
            grid.add_row(f"{row.w_emb:.1f}", f"{row.w_terms:.1f}", f"{row.floor:.4f}", f"{row.offtopic_dropped:.3f}")
        out.print(grid)
    if output is not None:
        output.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        err.print(f"wrote {output}")


@eval_app.command("usefulness")
@handle_errors
def eval_usefulness(
    dataset: Path = typer.Option(Path("tests/data/usefulness_pairs.jsonl"), "--set", help="labelled JSONL"),
    raters: str = typer.Option(
        "embedding,ranker", help="comma-separated, of: embedding, ranker, llm-yes-no, llm-scale"
    ),
    split: str = typer.Option("test", help="test (claim fold 0) | dev (the other folds) | all"),
    sample: int | None = typer.Option(
        None, min=4, help="a balanced sample: N/2 relevant, N/4 on-topic, N/4 off-topic pairs (for the LLM raters)"
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """How well each Stage-2 rater of citation expansion separates relevant papers from off-topic and on-topic
    ones: ROC AUC on the same labelled (claim, paper) pairs, and seconds per pair."""
    from lyra.services.evaluation import RATERS, evaluate_usefulness

    names = [r.strip() for r in raters.split(",") if r.strip()]
    unknown = [r for r in names if r not in RATERS]
    if unknown or not names:
        raise typer.BadParameter(f"choose from {', '.join(RATERS)}", param_hint="--raters")
    per_label = None
    if sample is not None:
        per_label = {"relevant": sample - 2 * (sample // 4), "on_topic": sample // 4, "off_topic": sample // 4}
    settings = settings_from_env()
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("rating", total=None)
        results = evaluate_usefulness(
            settings, dataset, names, split, per_label, progress=lambda n: bar.advance(task, n)
        )
    if as_json:
        print(json.dumps([r.model_dump() for r in results], indent=2))
        return

    def auc(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    pairs = results[0].pairs if results else 0
    labels = results[0].by_label if results else {}
    table = Table(
        "rater", "AUC rel vs off-topic", "AUC rel vs on-topic", "AUC rel vs rest", "mean rel / on / off",
        "distinct", "s/pair",
        title=f"Stage 2 raters on {dataset} ({split}, {pairs} pairs: {labels})",
    )  # fmt: skip
    for r in results:
        means = " / ".join(f"{r.mean_score.get(k, float('nan')):.2f}" for k in ("relevant", "on_topic", "off_topic"))
        table.add_row(
            r.rater, auc(r.auc_relevant_vs_off_topic), auc(r.auc_relevant_vs_on_topic), auc(r.auc_relevant_vs_rest),
            means, str(r.distinct_scores), f"{r.seconds_per_pair:.3f}",
        )  # fmt: skip
    out.print(table)


_INJECTION_DATA = Path("tests/data/injection")
_SCANNER_CORPORA = ("scifact_train.jsonl", "check_covid_train.jsonl", "check_covid_dev.jsonl", "fever_rte_dev.jsonl")


@eval_app.command("scanner")
@handle_errors
def eval_scanner(
    heldout: list[Path] = typer.Option(
        [_INJECTION_DATA / "hostile_heldout.jsonl", _INJECTION_DATA / "hostile_fresh.jsonl"],
        "--heldout",
        help="hostile snippets kept out of tuning",
    ),
    dev: list[Path] = typer.Option(
        [_INJECTION_DATA / "hostile_dev.jsonl"], "--dev", help="hostile snippets the rules were tuned on"
    ),
    benign: list[Path] = typer.Option([_INJECTION_DATA / "benign.jsonl"], "--benign", help="innocent look-alikes"),
    training: Path = typer.Option(
        _TRAINING, help="folder of claim/evidence JSONL: every distinct evidence text is scanned for false positives"
    ),
    corpus: list[Path] = typer.Option([], "--corpus", help="scan these evidence JSONL files instead of --training's"),
    no_training: bool = typer.Option(False, "--no-training", help="hand-written sets only"),
    show_heldout: bool = typer.Option(False, "--show-heldout", help="also list the held-out misses (spoils the set)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Catch rate of the prompt-injection scanner on hostile snippets (held-out first) and its false-positive rate on
    benign look-alikes and on real abstracts and evidence sentences (SciFact, Check-COVID, FEVER)."""
    corpora = list(corpus)
    if not corpora and not no_training:
        if not training.is_dir():
            raise typer.BadParameter(
                f"{training} is not a folder; pass --training DIR, --corpus FILE or --no-training",
                param_hint="--training",
            )
        corpora = [training / name for name in _SCANNER_CORPORA if (training / name).is_file()]
        if not corpora:
            raise typer.BadParameter(
                f"none of {', '.join(_SCANNER_CORPORA)} in {training}; pass --corpus FILE or --no-training",
                param_hint="--training",
            )
    from lyra.services.scanner_evaluation import scanner_report

    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("scanning", total=None)
        report = scanner_report(heldout, dev, benign, corpora, progress=lambda n: bar.advance(task, n))
    if as_json:
        print(report.model_dump_json(indent=2))
        return
    table = Table("set", "role", "texts", "flagged", "rate", "by kind", "s", title="prompt-injection scanner")
    for s in report.sets:
        measure = "caught" if s.role.startswith("hostile") else "false positives"
        kinds = ", ".join(f"{k} {v}" for k, v in s.by_kind.items())
        table.add_row(
            s.name, s.role, str(s.texts), str(s.flagged), f"{s.rate:.1%} {measure}", kinds, f"{s.seconds:.1f}"
        )
    out.print(table)
    for s in report.sets:
        if s.missed and (s.role == "hostile-dev" or show_heldout):
            out.print(f"{s.name} missed: {', '.join(s.missed)}", highlight=False)
        if s.role == "hostile-heldout" and s.missed and not show_heldout:
            out.print(f"{s.name}: {len(s.missed)} missed (not listed: --show-heldout)", highlight=False)
        for f in s.flagged_texts:
            out.print(f"{s.name} flagged {f.id} ({', '.join(f.kinds)}): {f.detail} | {f.excerpt}", highlight=False)
