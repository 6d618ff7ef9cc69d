"""The stance judge's sentence selectors (lyra.ml.sentence_selector): the fitted rationale selector learns, from tiny
passages, which sentences carry a verdict, round-trips through the artifact with its sha256 checked, and is what the
judge reads with. Every embedding here comes from a declared fake embedder (fixed vectors, so the cosines are known);
the real MiniLM embedder is measured in docs/evaluation/stance-variants.md (scripts/selector_recall.py)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from lyra.core.errors import ConfigError, InvalidInputError
from lyra.ml.evaluation import LabelledPair
from lyra.ml.sentence_selector import (
    SELECTOR_FEATURES,
    SELECTOR_FILE,
    RationaleSelector,
    fit_selector,
    rationale_recall,
    read_selector,
    select,
    sentence_features,
    top_k,
)
from lyra.ml.stance_judge import TrainedStanceJudge
from lyra.ml.stance_training import TrainingConfig
from lyra.services.training import sentence_selector_entry

CLAIM = "Drug Q lowers blood pressure."


def _fake_embed(texts: Sequence[str]) -> np.ndarray:
    """Declared fake embedder: a text "s<cos>:..." embeds at cosine <cos> to CLAIM (unit vectors in 2-D)."""
    out = []
    for text in texts:
        cos = 1.0 if text == CLAIM else float(text.split(":", 1)[0][1:])
        out.append([cos, float(np.sqrt(max(0.0, 1.0 - cos * cos)))])
    return np.asarray(out)


def _passage(rng: random.Random) -> tuple[list[str], list[int]]:
    """Six sentences: distractors close to the claim that restate its topic, and one result sentence (a number,
    result wording) that is the rationale although it sits further from the claim by cosine."""
    sentences = [f"s{rng.uniform(0.6, 0.9):.3f}: background on the blood pressure topic" for _ in range(5)]
    rationale = rng.randrange(6)
    sentences.insert(rationale, f"s{rng.uniform(0.3, 0.5):.3f}: pressure was significantly reduced by 9 mmHg")
    return sentences, [rationale]


def test_the_rationale_selector_learns_what_cosine_misses_and_recall_counts_it() -> None:
    rng = random.Random(0)
    fit = [(CLAIM, *_passage(rng)) for _ in range(40)]
    selector = fit_selector(fit, _fake_embed)
    held_out = [_passage(rng) for _ in range(20)]
    passages = [(CLAIM, sentences) for sentences, _ in held_out]
    gold = [rationale for _, rationale in held_out]
    cosine = rationale_recall(select(passages, 2, _fake_embed, None), gold)
    fitted = rationale_recall(select(passages, 2, _fake_embed, selector), gold)
    assert cosine["sentences"] == 0.0  # the rationale is always the furthest by cosine here
    assert fitted == {"pairs": 20.0, "sentences": 1.0, "all": 1.0, "any": 1.0}


def test_recall_counts_sentences_whole_rationales_and_any_hit_over_pairs_that_have_them() -> None:
    recall = rationale_recall([[0, 1], [2, 3], [0], [4]], [[1, 2], [2], [], [0]])
    # pairs 1, 2 and 4 have rationales: 1 + 1 + 0 of 4 sentences; one wholly covered; two with a hit
    assert recall == {"pairs": 3.0, "sentences": 0.5, "all": 1 / 3, "any": 2 / 3}


def test_top_k_keeps_the_best_in_their_original_order_and_short_passages_whole() -> None:
    assert top_k(np.asarray([0.1, 0.9, 0.5, 0.9]), 2) == [1, 3]
    assert top_k(np.asarray([0.3, 0.2]), 5) == [0, 1]
    passages = [(CLAIM, ["s0.9: a", "s0.1: b", "s0.5: c"]), (CLAIM, ["s0.2: only"])]
    assert select(passages, 2, _fake_embed, None) == [[0, 2], [0]]


def test_features_are_named_and_read_the_passage() -> None:
    sentences = ["Blood pressure background.", "It was reduced by 9 mmHg."]
    vectors = np.asarray([[0.9, np.sqrt(1 - 0.81)], [0.4, np.sqrt(1 - 0.16)]])  # cosines 0.9 and 0.4 to [1, 0]
    features = sentence_features(CLAIM, sentences, np.asarray([1.0, 0.0]), vectors)
    row = {name: features[:, i].tolist() for i, name in enumerate(SELECTOR_FEATURES)}
    assert row["cosine"] == pytest.approx([0.9, 0.4])
    assert row["cosine_gap"] == pytest.approx([0.0, -0.5]) and row["cosine_top"] == [1.0, 0.5]
    assert row["numbers"] == [0.0, 1.0] and row["result_words"] == [0.0, 1.0]
    assert row["position"] == [0.0, 1.0] and row["first"] == [1.0, 0.0] and row["last"] == [0.0, 1.0]
    assert row["claim_overlap"] == pytest.approx([2 / 4, 0.0])  # "blood", "pressure" of drug/lowers/blood/pressure


def test_a_fit_needs_both_kinds_of_sentence() -> None:
    with pytest.raises(ValueError, match="rationale and other"):
        RationaleSelector.fit(np.ones((4, len(SELECTOR_FEATURES))), np.ones(4))
    with pytest.raises(ValueError, match="no passage"):
        fit_selector([(CLAIM, ["s0.5: x", "s0.4: y"], [])], _fake_embed)


def test_the_stored_selector_round_trips_and_a_changed_file_is_refused(tmp_path: Path) -> None:
    rng = random.Random(1)
    selector = fit_selector([(CLAIM, *_passage(rng)) for _ in range(20)], _fake_embed)
    entry = selector.write(tmp_path, "unit test")
    loaded = read_selector(tmp_path, entry)
    assert loaded is not None and np.allclose(loaded.weights, selector.weights, atol=1e-5)
    assert read_selector(tmp_path, {"kind": "cosine"}) is None and read_selector(tmp_path, None) is None
    data = json.loads((tmp_path / SELECTOR_FILE).read_text(encoding="utf-8"))
    data["weights"][1] += 1.0
    (tmp_path / SELECTOR_FILE).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match="sha256"):
        read_selector(tmp_path, entry)
    with pytest.raises(ConfigError, match="unknown sentence selector"):
        read_selector(tmp_path, {"kind": "llm"})


def test_the_judge_reads_the_sentences_its_artifacts_selector_chooses(tmp_path: Path) -> None:
    rng = random.Random(2)
    selector = fit_selector([(CLAIM, *_passage(rng)) for _ in range(40)], _fake_embed)
    manifest = {
        "base": {"model": "x", "sha256": ""},
        "artifact": {"file": "t.safetensors", "sha256": "0" * 64},
        "combiner": {},
        "max_length": 32,
        "top_k_sentences": 1,
        "sentence_selector": selector.write(tmp_path),
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    sentences = ["s0.8: background on blood pressure", "s0.4: pressure was significantly reduced by 9 mmHg"]
    judge = TrainedStanceJudge(tmp_path, "unused", fitting=True, embed=_fake_embed)
    assert judge._closest([sentences], [CLAIM]) == [[sentences[1]]]
    manifest["sentence_selector"] = {"kind": "cosine"}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    cosine = TrainedStanceJudge(tmp_path, "unused", fitting=True, embed=_fake_embed)
    assert cosine._closest([sentences], [CLAIM]) == [[sentences[0]]]


def test_training_fits_the_selector_on_the_network_folds_and_refuses_bad_choices(tmp_path: Path) -> None:
    rng = random.Random(3)
    pairs = []
    for i in range(20):
        sentences, rationale = _passage(rng)
        pairs.append(
            LabelledPair(
                id=str(i),
                premise=" ".join(sentences),
                hypothesis=CLAIM,
                label="entailment",
                sentences=sentences,
                rationale=rationale,
            )
        )
    config = TrainingConfig(top_k_sentences=2, sentence_selector="rationale")
    entry = sentence_selector_entry(tmp_path, pairs, config, _fake_embed)
    assert entry["kind"] == "rationale" and "20 pairs" in entry["note"]
    assert read_selector(tmp_path, entry) is not None
    assert sentence_selector_entry(tmp_path, pairs, TrainingConfig(top_k_sentences=2), _fake_embed) == {
        "kind": "cosine"
    }
    base = {"files": [tmp_path / "none.jsonl"], "output": tmp_path, "base": "x", "base_id": "x"}
    from lyra.services.training import train_stance

    for bad, field in (
        (TrainingConfig(top_k_sentences=2, sentence_selector="llm"), "sentence_selector"),
        (TrainingConfig(top_k_sentences=0, sentence_selector="rationale"), "sentence_selector"),
    ):
        with pytest.raises(InvalidInputError) as caught:
            train_stance(config=bad, **base)  # type: ignore[arg-type]
        assert caught.value.field == field
