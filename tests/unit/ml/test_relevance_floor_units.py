"""Fitting the relevance floor: the pure pieces (lyra/ml/floor_fit.py) and the pair building of
lyra/services/relevance_floor.py, on tiny hand-made inputs and a fake embedder."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from lyra.core.errors import InvalidInputError
from lyra.core.settings import load_settings
from lyra.ml.evaluation import LabelledPair
from lyra.ml.floor_fit import fit_floor, rationale_chunks, round_down, share_at_least, weight_grid
from lyra.ml.protocols import FloatArray
from lyra.services.relevance_floor import build_part, relevance_floor_report


def test_fit_floor_is_the_highest_floor_keeping_the_target_share() -> None:
    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    floor = fit_floor(scores, 0.9)
    assert floor == pytest.approx(0.2)
    assert share_at_least(scores, floor) >= 0.9
    assert share_at_least(scores, np.nextafter(floor, 1.0)) < 0.9


def test_fit_floor_with_full_recall_is_the_lowest_score_and_rounds_the_kept_count_up() -> None:
    assert fit_floor([0.5, -0.2, 0.1], 1.0) == pytest.approx(-0.2)
    # 0.98 of 3 scores is 2.94: all three must stay
    assert fit_floor([0.5, -0.2, 0.1], 0.98) == pytest.approx(-0.2)
    assert fit_floor([0.5, 0.4, 0.1], 0.5) == pytest.approx(0.4)


def test_fit_floor_keeps_every_tied_score() -> None:
    floor = fit_floor([0.3, 0.3, 0.3, 0.9], 0.5)
    assert floor == pytest.approx(0.3)
    assert share_at_least([0.3, 0.3, 0.3, 0.9], floor) == 1.0


@pytest.mark.parametrize("target", [0.0, -0.1, 1.01])
def test_fit_floor_refuses_a_target_outside_zero_to_one(target: float) -> None:
    with pytest.raises(ValueError, match="target recall"):
        fit_floor([0.5], target)


def test_fit_floor_refuses_no_scores() -> None:
    with pytest.raises(ValueError, match="no relevant scores"):
        fit_floor([], 0.9)


def test_share_at_least_counts_the_floor_itself_and_is_zero_for_no_scores() -> None:
    assert share_at_least([0.2, 0.3, 0.4, 0.5], 0.3) == 0.75
    assert share_at_least([], 0.3) == 0.0


@pytest.mark.parametrize(("value", "expected"), [(0.2455, 0.24), (0.3, 0.3), (0.29, 0.29), (-0.011, -0.02)])
def test_round_down_never_raises_a_floor(value: float, expected: float) -> None:
    assert round_down(value) == pytest.approx(expected)
    assert round_down(value) <= value + 1e-9


def test_rationale_chunks_finds_whole_sentences_whatever_the_spacing_and_case() -> None:
    sentences = ["Cats sleep a lot.", "Dogs   bark at night.", "Birds sing."]
    chunks = ["cats sleep a lot. Dogs bark", "at night. Birds sing.", "Dogs bark at night. Birds sing."]
    assert rationale_chunks(sentences, [0], chunks) == [0]
    assert rationale_chunks(sentences, [1], chunks) == [2]  # whole in chunk 2: the cut pieces do not count
    assert rationale_chunks(sentences, [0, 2], chunks) == [0, 1, 2]


def test_rationale_chunks_falls_back_to_the_ends_of_a_sentence_cut_by_a_chunk_boundary() -> None:
    start = "The randomised trial of vitamin D in 2,000 older women found "
    end = "no reduction in the rate of falls over three years of follow-up."
    chunks = ["Background text. " + start.strip(), end + " More text."]
    assert rationale_chunks([start + end], [0], chunks) == [0, 1]


def test_rationale_chunks_adds_nothing_for_a_sentence_found_nowhere_or_empty() -> None:
    assert rationale_chunks(["Not in the text at all, anywhere.", "  "], [0, 1], ["Something else."]) == []


def test_weight_grid_fits_one_floor_per_weighting_and_measures_the_off_topic_drop() -> None:
    # cosine separates the two kinds; overlap does not (off-topic passages share the claim's words here)
    rows = weight_grid(
        relevant_cosine=np.array([0.6, 0.7, 0.8]),
        relevant_overlap=np.array([0.5, 0.5, 0.5]),
        offtopic_cosine=np.array([0.1, 0.2, 0.3]),
        offtopic_overlap=np.array([0.9, 0.9, 0.9]),
        target=1.0,
        steps=2,
    )
    assert [(r.w_emb, r.w_terms) for r in rows] == [(0.0, 1.0), (0.5, 0.5), (1.0, 0.0)]
    assert rows[0].floor == pytest.approx(0.5) and rows[0].offtopic_dropped == 0.0
    assert rows[2].floor == pytest.approx(0.6) and rows[2].offtopic_dropped == 1.0
    assert rows[1].floor == pytest.approx(0.55) and rows[1].offtopic_dropped == pytest.approx(1 / 3)


def _pair(claim: str, abstract: str, label: str, rationale: Sequence[int] = ()) -> LabelledPair:
    sentences = [s.strip() + "." for s in abstract.split(".") if s.strip()]
    return LabelledPair(
        id=f"{claim[:10]}-{label}",
        premise=abstract,
        hypothesis=claim,
        label=label,
        sentences=sentences,
        rationale=list(rationale),
    )


_LONG_A = " ".join(f"Sentence {i} of the first abstract about sleep and caffeine in adults." for i in range(12))
_LONG_B = " ".join(f"Sentence {i} of the second abstract about rainfall and crops in Kenya." for i in range(12))
_SHORT_C = "A short abstract on ocean temperature. It reports warming of the surface water."


def test_build_part_sorts_pairs_into_relevant_other_nei_and_off_topic() -> None:
    pairs = [
        _pair("Caffeine shortens sleep.", _LONG_A, "entailment", [11]),
        _pair("Caffeine shortens sleep.", _SHORT_C, "neutral"),
        _pair("Rain raises crop yields.", _LONG_B, "contradiction", [0]),
    ]
    part = build_part("tiny", "fit", pairs, max_chars=300, per_claim=2, rng=np.random.default_rng(0))
    assert part.claims == ["Caffeine shortens sleep.", "Rain raises crop yields."]
    assert part.abstracts == 3
    chunks_a = [i for i, t in enumerate(part.passages) if "first abstract" in t]
    assert len(chunks_a) > 1  # the long abstract is cut into several passages
    relevant = part.pairs["relevant"]
    assert {c for c, _ in relevant} == {0, 1}
    assert all("Sentence 11 of the first" in part.passages[p] for c, p in relevant if c == 0)
    assert {(0, p) for p in chunks_a} == {pair for pair in relevant + part.pairs["other"] if pair[0] == 0}
    assert part.pairs["nei"] == [(0, part.passages.index(_SHORT_C))]
    assert len(part.cited) == 2 and all(part.cited)
    for claim, passage in part.pairs["offtopic"]:
        own = "first abstract" if claim == 0 else "second abstract"
        assert own not in part.passages[passage]
        assert not (claim == 0 and part.passages[passage] == _SHORT_C)  # its NEI abstract is cited, not off topic
    assert len(part.pairs["offtopic"]) == 4
    assert part.not_found == 0


class _WordEmbedder:
    """Hashes words into 64 dimensions: texts sharing words are close, as a fake for MiniLM."""

    model_id = "fake-words"
    dimension = 64

    def embed(self, texts: Sequence[str]) -> FloatArray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().replace(".", " ").split():
                out[row, int(hashlib.sha256(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _row(claim: str, sentences: list[str], label: str, rationale: list[int]) -> dict[str, object]:
    return {
        "pair_id": claim,
        "claim": claim,
        "evidence_text": " ".join(sentences),
        "evidence_sentences": sentences,
        "rationale_idx": rationale,
        "label": label,
    }


def test_the_report_fits_the_floor_on_the_fit_file_and_measures_the_held_out_one(tmp_path: Path) -> None:
    topics = ["caffeine sleep", "rainfall crops", "ocean warming", "vitamin falls", "masks transmission"]
    fit_rows = [
        _row(f"{t} claim {i}", [f"Background on {t}.", f"The {t} claim {i} holds in trials."], "SUPPORT", [1])
        for i, t in enumerate(topics)
    ]
    held_rows = [
        _row(f"{t} claim {i}", [f"The {t} claim {i} fails here.", "Methods follow."], "CONTRADICT", [0])
        for i, t in enumerate(reversed(topics))
    ]
    settings = load_settings(relevance_weight_embedding=0.7, relevance_weight_terms=0.3)
    report = relevance_floor_report(
        settings,
        [_write(tmp_path / "fit.jsonl", fit_rows)],
        [_write(tmp_path / "held.jsonl", held_rows)],
        target=1.0,
        per_claim=2,
        embedder=_WordEmbedder(),
    )
    assert report.fitted and report.floor <= report.floor_exact
    assert [(s.name, s.role) for s in report.sets] == [("fit", "fit"), ("held", "heldout")]
    fit, held = report.sets
    assert fit.relevant_pairs == 5 and fit.recall == 1.0 and fit.cited_recall == 1.0
    assert held.relevant_pairs == 5 and held.offtopic_pairs == 10
    assert report.texts_embedded == 20  # 5 claims + 5 passages per file
    assert len(report.weight_grid) == 11


def test_the_report_measures_a_given_floor_without_fitting(tmp_path: Path) -> None:
    rows = [_row("caffeine shortens sleep", ["Caffeine shortens sleep in adults."], "SUPPORT", [0])]
    report = relevance_floor_report(
        load_settings(),
        [],
        [_write(tmp_path / "held.jsonl", rows)],
        floor=5.0,
        embedder=_WordEmbedder(),
    )
    assert not report.fitted and report.floor == 5.0
    assert report.sets[0].recall == 0.0 and report.weight_grid == []


def test_the_report_refuses_fit_files_without_a_rationale(tmp_path: Path) -> None:
    rows = [_row("caffeine shortens sleep", ["Unrelated text."], "NEI", [])]
    with pytest.raises(InvalidInputError, match="fit"):
        relevance_floor_report(load_settings(), [_write(tmp_path / "fit.jsonl", rows)], [], embedder=_WordEmbedder())
