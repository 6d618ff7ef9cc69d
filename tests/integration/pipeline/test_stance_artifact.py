"""The shipped stance judge (config/stance/): its hashes are checked at load, it judges real pairs the way it was
trained, and `lyra eval nli` runs on a 30-pair slice of real held-out pairs (real weights, no fakes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lyra.core.errors import ConfigError
from lyra.core.settings import Settings
from lyra.ml.evaluation import evaluate, load_pairs
from lyra.ml.factory import Models, stance_base_path
from lyra.ml.protocols import LABELS
from lyra.ml.stance_judge import MANIFEST, TENSORS, StanceArtifact, TrainedStanceJudge, load_fit_rows
from lyra.ml.weights import sha256_file
from tests.support.helpers import ROOT

pytestmark = [pytest.mark.models]
SHIPPED = ROOT / "config" / "stance"
DATA = ROOT / "tests" / "data"


def trained_settings(**extra: object) -> Settings:
    return Settings().model_copy(update={"nli_backend": "trained", "stance_use_llm": False, **extra})


def test_the_shipped_artifact_matches_its_manifest_and_records_how_it_was_made() -> None:
    artifact = StanceArtifact.read(SHIPPED)
    assert sha256_file(SHIPPED / TENSORS) == artifact.sha256
    training = artifact.manifest["training"]
    assert {f["name"] for f in training["files"]} == {"scifact_train.jsonl", "check_covid_train.jsonl"}
    assert all(len(f["sha256"]) == 64 for f in training["files"])
    assert training["config"]["seed"] == 0
    assert (SHIPPED / TENSORS).stat().st_size < 20_000_000  # small enough for the repository


def test_the_shipped_judge_is_far_above_chance_on_pairs_it_was_trained_on() -> None:
    judge = Models(trained_settings()).nli
    assert isinstance(judge, TrainedStanceJudge)
    pairs = load_pairs(DATA / "stance_scifact_train_30.jsonl")
    # the network on the rationale sentences it was trained on (47 rows): a random head is right about 1/3 of the time
    rows = [(p.hypothesis, p.sentences[i], p.label) for p in pairs for i in p.rationale]
    probs = judge.network_probabilities([c for c, _, _ in rows], [s for _, s, _ in rows])
    right = sum(LABELS[int(row.argmax())] == label for row, (_, _, label) in zip(probs, rows, strict=True))
    assert right / len(rows) >= 0.65, f"{right} of {len(rows)}"
    # the whole judge on the 30 pairs: chance is 1/3, and 15 or more right by chance has a probability of about 0.04
    result = evaluate(judge, pairs)
    assert result.accuracy >= 0.5, result.confusion


def test_a_tampered_artifact_or_a_different_base_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "stance"
    shutil.copytree(SHIPPED, copy)
    data = bytearray((copy / TENSORS).read_bytes())
    data[-1] ^= 0x01
    (copy / TENSORS).write_bytes(bytes(data))
    judge = TrainedStanceJudge(copy, stance_base_path(trained_settings()))
    with pytest.raises(ConfigError, match="refusing to load"):
        judge.judge([("Masks reduced transmission.", "Masks reduce transmission.")])
    shutil.copy(SHIPPED / TENSORS, copy / TENSORS)
    manifest = json.loads((copy / MANIFEST).read_text())
    manifest["base"]["sha256"] = "0" * 64
    (copy / MANIFEST).write_text(json.dumps(manifest))
    judge = TrainedStanceJudge(copy, stance_base_path(trained_settings()))
    with pytest.raises(ConfigError, match="refusing to mix") as mixed:
        judge.judge([("Masks reduced transmission.", "Masks reduce transmission.")])
    assert "LYRA_STANCE_BASE_MODEL=builtin:all-MiniLM-L6-v2" in str(mixed.value.hint)  # the base it was trained on
    with pytest.raises(ConfigError, match="no trained stance judge"):
        TrainedStanceJudge(tmp_path / "empty", stance_base_path(trained_settings()))


def test_eval_nli_on_a_slice_of_real_held_out_pairs_reports_figures_computed_from_its_verdicts() -> None:
    """`lyra eval nli --judge trained` on the 30-pair Check-COVID dev slice: the JSON's shape, its confusion matrix
    equal to the one the same judge's verdicts give in this process, and every figure consistent with it."""
    slice_file = DATA / "stance_check_covid_dev_30.jsonl"
    command = [
        sys.executable, "-m", "lyra", "eval", "nli", "--judge", "trained", "--set", str(slice_file), "--json",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=os.environ, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["pairs"] == 30 and report["judge"].startswith("stance-minilm:")
    assert set(report["per_class"]) == set(LABELS) and report["pairs_per_second"] > 0.0
    for key in ("accuracy", "macro_f1", "brier", "ece", "swap_rate", "mean_confidence_right"):
        assert 0.0 <= report[key] <= 2.0, key
    # the verdicts, judged here by the same network-only judge in the same batches (rows: gold, columns: verdict)
    pairs = load_pairs(slice_file)
    here = evaluate(Models(trained_settings()).nli, pairs)
    confusion = np.asarray(report["confusion"])
    assert confusion.tolist() == here.confusion and confusion.sum() == 30
    assert confusion.sum(axis=1).tolist() == [sum(p.label == label for p in pairs) for label in LABELS]
    assert report["accuracy"] == pytest.approx(np.trace(confusion) / 30)
    f1 = []
    for i, label in enumerate(LABELS):
        precision = confusion[i, i] / max(1, confusion[:, i].sum())
        recall = confusion[i, i] / confusion[i, :].sum()
        assert report["per_class"][label]["recall"] == pytest.approx(recall)
        f1.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    assert report["macro_f1"] == pytest.approx(np.mean(f1))
    swaps = confusion[0, 1] + confusion[1, 0]
    assert report["swap_rate"] == pytest.approx(swaps / confusion[:2, :].sum())
    assert report["brier"] == pytest.approx(here.brier, abs=1e-6) and report["ece"] == pytest.approx(here.ece, abs=1e-6)


def test_the_default_judge_reads_a_finding_a_null_finding_and_an_off_topic_passage() -> None:
    from tests.support.stance_texts import CLAIM, NULL, OFF_TOPIC, SUPPORT

    judge = Models(Settings()).nli  # the default: the trained judge with the LLM's two answers
    assert isinstance(judge, TrainedStanceJudge) and judge.llm_judge is not None
    supported, refuted, unrelated = judge.judge([(SUPPORT, CLAIM), (NULL, CLAIM), (OFF_TOPIC, CLAIM)])
    assert supported.label == "entailment"
    assert refuted.label == "contradiction"  # a null finding is the most common refutation in abstracts
    assert unrelated.label == "neutral"


def test_lyra_train_stance_examples_refits_a_copy_with_reviewer_examples(tmp_path: Path) -> None:
    """`lyra train stance-examples` (network-only combiner here: no LLM time) adds labelled pairs to the shipped
    artifact's kept fitting rows; the copy loads with its hashes checked and its combiner moves towards them, and a
    tampered copy of the fitting rows is refused."""
    pairs = load_pairs(DATA / "learning_judge_errors.jsonl")[:3]  # NEI pairs the shipped judge calls SUPPORTS
    examples = tmp_path / "examples.jsonl"
    examples.write_text(
        "".join(
            json.dumps({"id": p.id, "premise": p.premise, "hypothesis": p.hypothesis, "label": "neutral"}) + "\n"
            for p in pairs
        ),
        encoding="utf-8",
    )
    out = tmp_path / "refit"
    env = {**os.environ, "LYRA_STATE_DIR": str(tmp_path / "state")}
    done = subprocess.run(
        [sys.executable, "-m", "lyra", "train", "stance-examples", str(examples), "--out", str(out), "--weight", "20"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "3 examples x20 added to combiner" in done.stdout
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["learned_examples"]["count"] == 3 and manifest["fit_data"]["rows"]["combiner"] == 558 + 60
    texts = [(p.premise, p.hypothesis) for p in pairs]
    shipped = TrainedStanceJudge(SHIPPED, stance_base_path(Settings()), threads=2)
    refitted = TrainedStanceJudge(out, stance_base_path(Settings()), threads=2)
    before = [r.probs["neutral"] for r in shipped.judge(texts)]
    after = [r.probs["neutral"] for r in refitted.judge(texts)]
    assert sum(after) > sum(before), (before, after)  # the fit moved towards the examples' label (measured: +0.19)
    (out / manifest["fit_data"]["file"]).write_bytes(b"tampered")
    tampered = StanceArtifact.read(out)
    with pytest.raises(ConfigError, match="does not match the sha256"):
        load_fit_rows(tampered)


def test_an_artifact_with_a_rationale_selector_reads_the_sentences_it_chooses_and_checks_its_hash(
    tmp_path: Path,
) -> None:
    """The shipped network with a rationale selector fitted (real MiniLM embeddings) on the rationale sentences of
    the 30 SciFact training-fold pairs: the judge reads exactly the 3 sentences the selector ranks best, and a
    changed selector file is refused at load."""
    from lyra.core.text import split_sentences
    from lyra.ml.embedder import BUILTIN_MINILM, SentenceTransformerEmbedder
    from lyra.ml.evaluation import LabelledPair
    from lyra.ml.sentence_selector import SELECTOR_FILE, RationaleSelector, fit_selector, select
    from lyra.services.training import refit_with_examples

    embed = SentenceTransformerEmbedder(BUILTIN_MINILM, threads=2).embed
    pairs = load_pairs(DATA / "stance_scifact_train_30.jsonl")
    selector = fit_selector([(p.hypothesis, p.sentences, p.rationale) for p in pairs], embed)
    copy = tmp_path / "stance"
    shutil.copytree(SHIPPED, copy)
    manifest = json.loads((copy / MANIFEST).read_text(encoding="utf-8"))
    manifest.update(top_k_sentences=3, sentence_selector=selector.write(copy, "integration test"))
    (copy / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    judge = TrainedStanceJudge(copy, stance_base_path(trained_settings()), threads=2, embed=embed)

    def chosen(pair: LabelledPair, chooser: RationaleSelector | None) -> list[int]:
        return select([(pair.hypothesis, split_sentences(pair.premise))], 3, embed, chooser)[0]

    # pairs where the selector and the plain cosine choose differently, so that the test tells the two apart
    long = [p for p in pairs if chosen(p, selector) != chosen(p, None)][:3]
    assert long
    read = judge.sentence_probabilities([(p.premise, p.hypothesis) for p in long])
    for pair, (sentences, probs) in zip(long, read, strict=True):
        split = split_sentences(pair.premise)
        assert sentences == [split[i] for i in chosen(pair, selector)] and probs.shape == (3, 3)
    assert all(r.label in LABELS for r in judge.judge([(p.premise, p.hypothesis) for p in long]))
    # reviewer examples refitted into a copy of it (`lyra train stance-examples`): the copy keeps the selector, and
    # its features are read through the same embedder
    base = stance_base_path(trained_settings())
    refit = refit_with_examples(copy, tmp_path / "refit", long[:1], base, None, embed=embed)
    refitted = TrainedStanceJudge(tmp_path / "refit", stance_base_path(trained_settings()), threads=2, embed=embed)
    assert refit.combiners == ["combiner"] and (tmp_path / "refit" / SELECTOR_FILE).is_file()
    assert refitted.sentence_probabilities([(long[0].premise, long[0].hypothesis)])[0][0] == read[0][0]
    (copy / SELECTOR_FILE).write_text((copy / SELECTOR_FILE).read_text(encoding="utf-8") + " ", encoding="utf-8")
    with pytest.raises(ConfigError, match="refusing to load"):
        TrainedStanceJudge(copy, stance_base_path(trained_settings()), embed=embed)
