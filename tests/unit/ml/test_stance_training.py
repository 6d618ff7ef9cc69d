"""Unit tests of the stance data, training rows, pair features and combiner (no weights loaded, tiny data)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from lyra.core.errors import ConfigError, InvalidInputError
from lyra.ml.evaluation import LabelledPair, claim_fold, load_pairs, score
from lyra.ml.protocols import LABELS, NLIResult
from lyra.ml.stance_features import StanceCombiner
from lyra.ml.stance_judge import LLM_FEATURE_SETS, PLAIN_FEATURES, StanceArtifact, TrainedStanceJudge
from lyra.ml.stance_training import (
    PAIR_FEATURES,
    TrainingConfig,
    length_batches,
    negate_claim,
    pair_features,
    role_of,
    sentence_rows,
)

SHARED = {
    "pair_id": "p1",
    "claim": "Vitamin D is linked to fewer fractures.",
    "evidence_title": "A trial",
    "evidence_text": "We ran a trial. Fractures fell by 20%. Funding was public.",
    "evidence_sentences": ["We ran a trial.", "Fractures fell by 20%.", "Funding was public."],
    "rationale_idx": [1],
    "label": "SUPPORT",
    "claim_type": "composed",
}


def write_lines(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_shared_schema_and_lyras_own_schema_both_load(tmp_path: Path) -> None:
    own = {"id": "s1", "premise": "P.", "hypothesis": "H.", "label": "neutral", "kind": "off_topic"}
    pairs = load_pairs(write_lines(tmp_path / "mixed.jsonl", [SHARED, {**SHARED, "label": "NEI"}, own]))
    assert [p.label for p in pairs] == ["entailment", "neutral", "neutral"]
    first = pairs[0]
    assert (first.id, first.hypothesis, first.kind, first.rationale) == ("p1", SHARED["claim"], "composed", [1])
    assert first.sentences == SHARED["evidence_sentences"] and first.premise == SHARED["evidence_text"]


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        ({**SHARED, "label": "MAYBE"}, "label"),
        ({**SHARED, "rationale_idx": [7]}, "out of range"),
        ({k: v for k, v in SHARED.items() if k != "evidence_text"}, "evidence_text"),
        ({"id": "x", "premise": "p", "hypothesis": "h", "label": "SUPPORT"}, "must be one of"),
    ],
)
def test_a_bad_line_names_the_file_line_and_field(tmp_path: Path, row: dict[str, object], fragment: str) -> None:
    path = write_lines(tmp_path / "bad.jsonl", [SHARED, row])
    with pytest.raises(InvalidInputError) as caught:
        load_pairs(path)
    assert "bad.jsonl:2" in caught.value.field and fragment in caught.value.message


def test_an_empty_or_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="no such"):
        load_pairs(tmp_path / "nothing.jsonl")
    with pytest.raises(InvalidInputError, match="no labelled pairs"):
        load_pairs(write_lines(tmp_path / "empty.jsonl", []))


def test_folds_follow_the_claim_so_one_claim_never_sits_on_two_sides() -> None:
    claims = [f"claim number {i}" for i in range(500)]
    folds = [claim_fold(c) for c in claims]
    assert folds == [claim_fold(c) for c in claims]  # stable
    assert set(folds) == {0, 1, 2, 3, 4} and min(np.bincount(folds)) > 60  # spread
    pair = LabelledPair(id="a", premise="p", hypothesis=claims[0], label="neutral")
    twin = pair.model_copy(update={"id": "b", "premise": "another abstract"})
    assert role_of(pair) == role_of(twin)


@pytest.mark.parametrize(
    ("claim", "negated"),
    [
        ("Aspirin is effective against migraine.", "Aspirin is not effective against migraine."),
        ("Masks can reduce transmission.", "Masks can not reduce transmission."),
        ("Zinc does not shorten colds.", None),  # already negative
        ("Coffee reduces mortality.", None),  # no auxiliary verb to negate
    ],
)
def test_rule_negation(claim: str, negated: str | None) -> None:
    assert negate_claim(claim) == negated


def test_rows_carry_rationale_labels_neutral_sentences_and_flipped_negations() -> None:
    pair = load_pairs_from([SHARED])[0]
    rows = sentence_rows([pair], TrainingConfig(neutral_sentences=1, seed=3))
    by = {(r.claim, r.sentence): LABELS[r.label] for r in rows}
    assert by[(SHARED["claim"], "Fractures fell by 20%.")] == "entailment"
    assert by[("Vitamin D is not linked to fewer fractures.", "Fractures fell by 20%.")] == "contradiction"
    neutral = [s for (c, s), lab in by.items() if lab == "neutral"]
    assert len(neutral) == 1 and neutral[0] in ("We ran a trial.", "Funding was public.")
    plain = sentence_rows([pair], TrainingConfig(negation_augment=False))
    assert all("not" not in r.claim for r in plain)


def load_pairs_from(rows: list[dict[str, object]]) -> list[LabelledPair]:
    from lyra.ml.evaluation import parse_pair

    return [parse_pair(r) for r in rows]


def test_length_batches_cover_every_row_once() -> None:
    import random

    pair = load_pairs_from([SHARED])[0]
    rows = sentence_rows([pair] * 20, TrainingConfig())
    batches = length_batches(rows, 7, random.Random(0))
    assert sorted(map(id, [r for b in batches for r in b])) == sorted(map(id, rows))
    assert all(len(b) <= 7 for b in batches)


def test_pair_features_read_the_strongest_sentence() -> None:
    probs = np.asarray([[0.1, 0.1, 0.8], [0.7, 0.2, 0.1], [0.2, 0.3, 0.5]])
    x = pair_features(probs)
    assert len(x) == len(PAIR_FEATURES)
    named = dict(zip(PAIR_FEATURES, x, strict=True))
    assert named["max_entailment"] == 0.7 and named["entailment_at_best"] == 0.7
    assert named["contradiction_at_best"] == 0.2 and named["min_neutral"] == 0.1
    assert pair_features(np.zeros((0, 3)))[0] == 1.0


def test_the_combiner_learns_separable_features_and_round_trips(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    labels = [LABELS[i % 3] for i in range(300)]
    xs = np.stack([pair_features(np.asarray([np.eye(3)[i % 3] * 0.8 + 0.2 / 3])) for i in range(300)])
    xs[:, 1:] += rng.normal(0, 0.02, size=xs[:, 1:].shape)
    combiner = StanceCombiner.fit(xs, labels, feature_names=PAIR_FEATURES)
    predicted = [LABELS[int(i)] for i in combiner.probability_rows(xs).argmax(axis=1)]
    assert predicted == labels
    path = tmp_path / "c.json"
    combiner.save(path, "test")
    again = StanceCombiner.load(path, PAIR_FEATURES)
    assert np.allclose(again.weights, combiner.weights, atol=1e-5)
    with pytest.raises(ValueError, match="other features"):
        StanceCombiner.load(path)  # the LLM judge's feature names


def test_swap_rate_counts_direction_errors_among_directional_pairs() -> None:
    pairs = [LabelledPair(id=str(i), premise="p", hypothesis="h", label=g) for i, g in enumerate(LABELS * 2)]
    predicted = ["contradiction", "contradiction", "neutral", "entailment", "neutral", "entailment"]
    results = [NLIResult(p, {lab: 1.0 if lab == p else 0.0 for lab in LABELS}) for p in predicted]  # type: ignore[arg-type]
    evaluation = score(pairs, results, "fake", seconds=2.0)
    assert evaluation.swap_rate == pytest.approx(1 / 4)  # one E->C among four directional pairs
    assert evaluation.pairs_per_second == pytest.approx(3.0)


# ---------------------------------------------------------------- the judge's named features (declared fakes)
class _FakeQuestions:
    """A declared fake of the LLM's questions: fixed answers, and a log of what was asked."""

    model_id = "fake-llm"

    def __init__(self) -> None:
        self.asked: list[bool] = []

    def questions(self, passage: str, claim: str, verdict: bool = True) -> tuple[float, ...]:
        self.asked.append(verdict)
        return (0.8, 0.1, 0.7, 0.2, 0.1) if verdict else (0.8, 0.1)


def _artifact(folder: Path, combiner: dict[str, object] | None = None) -> Path:
    manifest = {
        "base": {"model": "x", "sha256": ""},
        "artifact": {"file": "t.safetensors", "sha256": "0" * 64},
        "combiner": combiner or {},
        "max_length": 32,
    }
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


class _FixedNetwork(TrainedStanceJudge):
    """The judge with a declared fake network: every sentence gets the same probabilities."""

    def sentence_probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[list[str], np.ndarray]]:
        return [(["One.", "Two."], np.asarray([[0.6, 0.1, 0.3], [0.1, 0.1, 0.8]])) for _ in pairs]


def test_the_judge_computes_the_named_features_and_asks_the_verdict_only_when_read(tmp_path: Path) -> None:
    llm = _FakeQuestions()
    judge = _FixedNetwork(_artifact(tmp_path), "base", fitting=True, llm_judge=llm)  # type: ignore[arg-type]
    pair = [("One. Two.", "A claim.")]
    plain = judge.features(pair, PLAIN_FEATURES)
    assert plain.shape == (1, len(PLAIN_FEATURES)) and llm.asked == []
    yes_no = judge.features(pair, LLM_FEATURE_SETS["yes-no"])
    assert llm.asked == [False]
    names = LLM_FEATURE_SETS["yes-no"]
    assert yes_no[0, names.index("llm_true")] == pytest.approx(0.8)
    logits = judge.features(pair, LLM_FEATURE_SETS["yes-no+verdict-logits"])
    assert llm.asked == [False, True]
    names = LLM_FEATURE_SETS["yes-no+verdict-logits"]
    assert logits[0, names.index("logit_verdict_agrees")] == pytest.approx(np.log(0.7 / 0.3))
    assert logits[0, names.index("max_entailment")] == pytest.approx(0.6)


def test_a_combiner_over_features_the_judge_cannot_compute_is_refused(tmp_path: Path) -> None:
    names = [*PLAIN_FEATURES, "mystery"]
    bad = {"features": names, "labels": list(LABELS), "weights": [[0.0, 0.0, 0.0]] * len(names), "note": ""}
    with pytest.raises(ConfigError, match="mystery"):
        StanceArtifact.read(_artifact(tmp_path, bad)).combiner()
    good = StanceCombiner.fit(np.ones((3, 2)), list(LABELS), feature_names=("bias", "logit_llm_true"))
    folder = _artifact(tmp_path, {})
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["combiner_llm"] = good.to_dict("test")
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert StanceArtifact.read(folder).combiner(with_llm=True).feature_names == ("bias", "logit_llm_true")


def test_active_reviewer_examples_join_the_combiner_fit_and_the_judge_id(tmp_path: Path) -> None:
    from lyra.ml.learned_rules import STANCE_TRAINED, LearnedRules
    from lyra.ml.stance_judge import save_fit_rows

    rng = np.random.default_rng(0)
    xs = np.hstack([np.ones((60, 1)), rng.random((60, len(PLAIN_FEATURES) - 1))])
    ys = rng.integers(0, 3, 60)
    base = StanceCombiner.fit(xs, [LABELS[i] for i in ys], feature_names=PLAIN_FEATURES)
    folder = _artifact(tmp_path, base.to_dict("base"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["fit_data"] = save_fit_rows(folder, {"combiner_x": xs, "combiner_y": ys}, 0.01)
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    current = [LearnedRules(STANCE_TRAINED)]
    judge = _FixedNetwork(folder, "base", examples=lambda: current[0])
    pair = [("One. Two.", "A claim.")]
    before, base_id = judge.judge(pair)[0], judge.model_id
    assert judge.combiner() is judge.combiner() and "rules:" not in base_id
    example = {"id": "r1", "premise": "One. Two.", "hypothesis": "A claim.", "label": "contradiction"}
    current[0] = LearnedRules(STANCE_TRAINED, 1, examples=(example,) * 3)
    after = judge.judge(pair)[0]
    assert after.probs["contradiction"] > before.probs["contradiction"]
    assert judge.model_id.startswith(f"{base_id}:rules:stance_trained@v1:")
    current[0] = LearnedRules(STANCE_TRAINED, 2)  # retired: exactly the artifact's combiner again
    assert judge.judge(pair)[0].probs == before.probs and judge.model_id == base_id


class _SureOrNot(_FixedNetwork):
    """Declared fake network: sure of a claim that says "sure", torn on any other."""

    def sentence_probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[list[str], np.ndarray]]:
        sure, torn = np.asarray([[0.98, 0.01, 0.01]]), np.asarray([[0.34, 0.33, 0.33]])
        return [(["One."], sure if "sure" in claim else torn) for _, claim in pairs]


def test_the_cascade_puts_only_the_networks_unsure_pairs_to_the_llm(tmp_path: Path) -> None:
    names = PLAIN_FEATURES
    plain = StanceCombiner(np.zeros((len(names), 3)), names)
    plain.weights[names.index("max_entailment"), 0] = 8.0  # sure when the network is
    llm_names = LLM_FEATURE_SETS["yes-no"]
    llm = StanceCombiner(np.zeros((len(llm_names), 3)), llm_names)
    llm.weights[llm_names.index("llm_false"), 1] = 8.0  # the LLM's "FALSE?" answer decides
    folder = _artifact(tmp_path, plain.to_dict("plain"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["combiner_llm"] = llm.to_dict("llm")
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    asked = _FakeQuestions()
    judge = _SureOrNot(folder, "base", llm_judge=asked, llm_threshold=0.9)  # type: ignore[arg-type]
    results = judge.judge([("One.", "A sure claim."), ("One.", "A torn claim.")])
    assert [r.method for r in results] == ["trained_sentences", "trained_sentences+llm"]
    assert results[0].label == "entailment" and len(asked.asked) == 1
    assert ":cascade0.9+" in judge.model_id


def test_a_balanced_fit_does_not_trade_the_rare_label_away() -> None:
    rng = np.random.default_rng(1)
    labels = ["entailment"] * 90 + ["contradiction"] * 10 + ["neutral"] * 90
    signal = np.asarray([{"entailment": 0.6, "contradiction": 0.4, "neutral": 0.0}[lab] for lab in labels])
    xs = np.column_stack([np.ones(len(labels)), signal + rng.normal(0, 0.15, len(labels))])
    plain = StanceCombiner.fit(xs, labels, feature_names=("bias", "x"))
    balanced = StanceCombiner.fit(xs, labels, feature_names=("bias", "x"), balanced=True)

    def rare_recall(combiner: StanceCombiner) -> float:
        predicted = combiner.probability_rows(xs).argmax(axis=1)
        rare = [i for i, lab in enumerate(labels) if lab == "contradiction"]
        return float(np.mean(predicted[rare] == LABELS.index("contradiction")))

    assert rare_recall(balanced) > rare_recall(plain)


def _verdict(label: str, confidence: float = 0.8) -> NLIResult:
    rest = (1.0 - confidence) / 2
    return NLIResult(label, {name: confidence if name == label else rest for name in LABELS}, "trained_sentences")


def test_the_example_memory_gives_the_reviewed_label_to_the_same_claim_and_passage_only() -> None:
    from lyra.ml.stance_judge import MAX_MEMORY_WEIGHT, ExampleMemory

    example = {
        "premise": "Masks cut  transmission by 50%.",
        "hypothesis": "Masks reduce transmission.",
        "label": "neutral",
    }
    memory = ExampleMemory([example], passage_similarity=0.98)  # no embedder: the passage's text must be the same
    pairs = [
        ("Masks cut transmission by 50%.", "masks reduce transmission"),  # spacing, case, final stop do not count
        ("Masks cut transmission by 50%.", "Masks increase transmission."),  # one word: another claim
        ("Masks cut transmission by 51%.", "Masks reduce transmission."),  # another passage, no embedder to compare
    ]
    results = memory.apply(pairs, [_verdict("entailment") for _ in pairs])
    assert [r.label for r in results] == ["neutral", "entailment", "entailment"]
    assert results[0].method == "trained_sentences+reviewer_example" and results[1].method == "trained_sentences"
    assert results[0].probs["neutral"] == pytest.approx(MAX_MEMORY_WEIGHT + (1 - MAX_MEMORY_WEIGHT) * 0.1)
    assert sum(results[0].probs.values()) == pytest.approx(1.0)


def test_the_example_memory_reaches_near_duplicate_passages_by_embedding() -> None:
    from lyra.ml.stance_judge import MIN_MEMORY_WEIGHT, ExampleMemory

    # declared fake embedder (unit test): fixed unit vectors, so the cosines are known exactly
    angle = {"Original abstract.": 0.0, "Preprint of the abstract.": 0.1, "An unrelated abstract.": 0.6}
    embedded: list[str] = []

    def embed(texts: Sequence[str]) -> np.ndarray:
        embedded.extend(texts)
        return np.asarray([[np.cos(angle[t]), np.sin(angle[t])] for t in texts])

    claim = "Drug X lowers mortality."
    examples = [
        {"premise": "Original abstract.", "hypothesis": claim, "label": "contradiction"},
        {"premise": "Original abstract.", "hypothesis": "Another claim.", "label": "entailment"},
    ]
    memory = ExampleMemory(examples, passage_similarity=0.98, embed=embed)
    pairs = [("Preprint of the abstract.", claim), ("An unrelated abstract.", claim), ("Original abstract.", claim)]
    results = memory.apply(pairs, [_verdict("entailment", 0.9) for _ in pairs])
    assert [r.label for r in results] == ["contradiction", "entailment", "contradiction"]
    cosine = float(np.cos(0.1))  # 0.995: a near-duplicate
    strength = MIN_MEMORY_WEIGHT + (0.95 - MIN_MEMORY_WEIGHT) * (cosine - 0.98) / 0.02
    assert results[0].probs["contradiction"] == pytest.approx(strength + (1 - strength) * 0.05)
    assert results[0].confidence < results[2].confidence  # the very passage weighs most
    assert "Original abstract." in embedded and embedded.count("Original abstract.") == 1  # examples embedded once
    assert not any(memory.matches([("Preprint of the abstract.", "Unknown claim.")]))  # no claim, no embedding


def test_reviewers_who_disagree_share_the_memorys_weight() -> None:
    from lyra.ml.stance_judge import ExampleMemory

    pair = ("A passage.", "A claim.")
    examples = [
        {"premise": pair[0], "hypothesis": pair[1], "label": "neutral"},
        {"premise": pair[0], "hypothesis": pair[1], "label": "contradiction"},
    ]
    result = ExampleMemory(examples, passage_similarity=0.98).apply([pair], [_verdict("entailment", 0.9)])[0]
    assert result.probs["neutral"] == pytest.approx(result.probs["contradiction"])
    assert result.probs["entailment"] < result.probs["neutral"]
