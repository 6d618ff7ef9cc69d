"""Fast unit tests of the model-side pieces, with fakes where a model would be (no weights loaded)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from lyra.core.text import split_sentences
from lyra.ml.cache import CachedJudge, NLICache
from lyra.ml.llm import chatml, option_probabilities
from lyra.ml.nli import _calibrated, combine_yes_no
from lyra.ml.protocols import FloatArray, NLIResult
from lyra.ml.ranking import CandidateRanker, tokenize
from lyra.ml.vector_index import FragmentIndex
from lyra.sources.chunking import chunk_text
from lyra.sources.domain_policy import DomainPolicy
from lyra.sources.local_files import SkippedDocument, SourceDocument, iter_documents

ROOT = Path(__file__).resolve().parents[3]


def unit(rows: list[list[float]]) -> np.ndarray:
    arr = np.asarray(rows, dtype=np.float32)
    return arr / np.linalg.norm(arr, axis=1, keepdims=True)


def test_sentence_splitter_keeps_numbers_and_abbreviations() -> None:
    text = "Risk fell by 12.5% (95% CI 3.1-20.0). Smith et al. found e.g. no change. Next sentence here."
    assert split_sentences(text) == [
        "Risk fell by 12.5% (95% CI 3.1-20.0).",
        "Smith et al. found e.g. no change.",
        "Next sentence here.",
    ]


def test_chunking_respects_size_and_overlaps_by_a_sentence() -> None:
    sentences = [f"Sentence number {i} says something about the topic at hand." for i in range(40)]
    passages = chunk_text(" ".join(sentences), max_chars=300)
    assert len(passages) > 5
    assert all(len(p.text) <= 300 for p in passages)
    for a, b in itertools.pairwise(passages):
        assert split_sentences(a.text)[-1] == split_sentences(b.text)[0]
    assert [p.position for p in passages] == list(range(len(passages)))


def test_chunking_keeps_short_paragraphs_whole_and_merges_headings() -> None:
    text = (
        "Title\n\nFirst paragraph is long enough to stand alone as a passage.\n\n"
        "The second paragraph is long enough as well, truly.\n\nFooter."
    )
    passages = [p.text for p in chunk_text(text, max_chars=500)]
    assert passages == [
        "Title First paragraph is long enough to stand alone as a passage.",
        "The second paragraph is long enough as well, truly. Footer.",
    ]


def test_option_probabilities_sum_token_variants_and_renormalise() -> None:
    top = [("Yes", math.log(0.5)), (" yes", math.log(0.1)), ("No", math.log(0.2)), ("The", math.log(0.2))]
    probs = option_probabilities(top, ["yes", "no"])
    assert probs["yes"] == pytest.approx(0.75)
    assert probs["no"] == pytest.approx(0.25)
    assert option_probabilities([("Maybe", 0.0)], ["yes", "no"]) == {"yes": 0.5, "no": 0.5}


def test_chatml_ends_at_the_assistant_turn() -> None:
    prompt = chatml([{"role": "user", "content": "hi"}])
    assert prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_calibration_removes_a_constant_lean() -> None:
    # A judge that says "yes" with 0.2 on content-free input: 0.2 becomes an even 0.5.
    assert _calibrated(0.2, 0.2) == pytest.approx(0.5)
    assert _calibrated(0.6, 0.2) > 0.8


@pytest.mark.parametrize(
    ("support", "contradict", "label"),
    [(0.9, 0.05, "entailment"), (0.05, 0.9, "contradiction"), (0.1, 0.1, "neutral"), (0.7, 0.9, "contradiction")],
)
def test_two_answers_combine_into_three_labels(support: float, contradict: float, label: str) -> None:
    probs = combine_yes_no(support, contradict)
    assert sum(probs.values()) == pytest.approx(1.0)
    assert max(probs, key=lambda k: probs[k]) == label


def test_ranker_puts_lexical_and_semantic_matches_first() -> None:
    texts = ["the cat sat on the mat", "stock markets fell sharply", "a cat and a mat", "rain in spain"]
    vectors = unit([[1, 0, 0], [0, 1, 0], [0.9, 0.1, 0], [0, 0, 1]])
    ranked = CandidateRanker(bm25_top_n=10).rank("cat mat", unit([[1, 0, 0]])[0], texts, vectors, top_k=2)
    assert {r.index for r in ranked} == {0, 2}
    assert ranked[0].score >= ranked[1].score
    assert tokenize("The Cat's 12.5-mg dose") == ["cat", "s", "12.5-mg", "dose"]


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_vector_index_search_near_duplicates_and_persistence(tmp_path: Path, kind: str) -> None:
    rng = np.random.default_rng(3)
    vectors = unit(rng.normal(size=(200, 16)).tolist())
    ids = [f"frg_{i}" for i in range(200)]
    index = FragmentIndex(16, tmp_path / "idx", kind=kind)
    assert index.add(ids, vectors) == 200
    assert index.add(ids[:5], vectors[:5]) == 0  # already there
    hits = index.search(vectors[:3], k=1)
    assert [h[0][0] for h in hits] == ids[:3]
    noisy = unit((vectors[7] + 0.01 * rng.normal(size=16))[None, :].tolist())
    assert index.near_duplicates(noisy, 0.95)[0][0] == "frg_7"  # type: ignore[index]
    assert index.near_duplicates(unit(rng.normal(size=(1, 16)).tolist()), 0.99) == [None]
    allowed = {"frg_10", "frg_11"}
    assert {fid for fid, _ in index.search(vectors[:1], k=2, allowed=allowed)[0]} <= allowed
    index.save()
    again = FragmentIndex.load(tmp_path / "idx", 16, kind=kind)
    assert len(again) == 200
    assert again.search(vectors[9:10], k=1)[0][0][0] == "frg_9"


def test_vector_index_with_a_corrupt_file_starts_empty(tmp_path: Path) -> None:
    (tmp_path / "idx.index").write_bytes(b'{"dimension": 16, "ids": ["a"]}\nnot a faiss index')
    assert len(FragmentIndex.load(tmp_path / "idx", 16)) == 0
    (tmp_path / "idx.index").write_bytes(b"no header at all")
    assert len(FragmentIndex.load(tmp_path / "idx", 16)) == 0


def test_vector_index_saves_its_watermark_and_refuses_a_file_whose_ids_do_not_match(tmp_path: Path) -> None:
    vectors = unit(np.random.default_rng(5).normal(size=(3, 16)).tolist())
    index = FragmentIndex(16, tmp_path / "idx")
    index.add(["a", "b", "c"], vectors)
    index.watermark, index.epoch = 41, "epoch-1"
    index.save()
    again = FragmentIndex.load(tmp_path / "idx", 16)
    assert (len(again), again.watermark, again.epoch) == (3, 41, "epoch-1")
    header, _, payload = (tmp_path / "idx.index").read_bytes().partition(b"\n")
    (tmp_path / "idx.index").write_bytes(header.replace(b'"c"]', b'"c", "d"]') + b"\n" + payload)
    assert len(FragmentIndex.load(tmp_path / "idx", 16)) == 0  # 4 ids for 3 vectors: rebuilt, never mismatched


class StaticSource:
    """Fake IndexSource for the unit test: a fixed set of fragments that may lose some (a clean-up)."""

    def __init__(self, vectors: dict[str, FloatArray]) -> None:
        self.vectors = dict(vectors)
        self.catch_ups = 0

    def catch_up(self, index: FragmentIndex) -> None:
        self.catch_ups += 1
        new = [fid for fid in self.vectors if fid not in index]
        if new:
            index.add(new, np.stack([self.vectors[f] for f in new]))

    def existing(self, fragment_ids: Sequence[str]) -> set[str]:
        return set(fragment_ids) & set(self.vectors)


def test_an_attached_source_is_caught_up_before_searches_and_deleted_hits_are_dropped() -> None:
    vectors = unit(np.random.default_rng(8).normal(size=(3, 16)).tolist())
    source = StaticSource({"a": vectors[0], "b": vectors[1]})
    index = FragmentIndex(16, None, kind="flat")
    index.attach(source)
    assert index.search(vectors[1:2], k=1)[0][0][0] == "b"  # caught up before the search
    assert source.catch_ups == 1
    near = unit((vectors[0] + 0.001)[None, :].tolist())
    assert index.near_duplicates(near, 0.95)[0][0] == "a"  # type: ignore[index]
    del source.vectors["a"]  # deleted in the graph: the index still holds it, the hit is dropped
    assert index.near_duplicates(near, 0.95) == [None]
    assert "a" not in index.ids() and len(index) == 1
    assert [fid for fid, _ in index.search(vectors[:1], k=2)[0]] == ["b"]


class CountingJudge:
    """Fake judge for the cache test: counts how often it is asked."""

    model_id = "fake-judge"

    def __init__(self) -> None:
        self.calls = 0

    def judge(self, pairs: list[tuple[str, str]]) -> list[NLIResult]:
        self.calls += len(pairs)
        return [NLIResult("neutral", {"entailment": 0.1, "contradiction": 0.1, "neutral": 0.8}, "fake")] * len(pairs)


def test_cache_never_judges_a_pair_twice(tmp_path: Path) -> None:
    inner = CountingJudge()
    judge = CachedJudge(inner, NLICache(tmp_path / "nli.sqlite"))
    judge.judge([("p1", "h"), ("p2", "h")])
    judge.judge([("p1", "h"), ("p3", "h")])
    assert inner.calls == 3
    reopened = CachedJudge(inner, NLICache(tmp_path / "nli.sqlite"))  # persisted across runs
    assert reopened.judge([("p2", "h")])[0].probs["neutral"] == pytest.approx(0.8)
    assert inner.calls == 3


def test_domain_categories_prefer_exact_then_longest_suffix(tmp_path: Path) -> None:
    path = tmp_path / "domains.yaml"
    path.write_text(
        "categories: {primary: 1.0, government: 0.95, academic: 0.90, trusted: 0.75, low: 0.40, unverified: 0.30,"
        " blocked: 0.0}\n"
        "default_category: unverified\n"
        "domains:\n"
        "  - {domain: '*.gov', category: government}\n"
        "  - {domain: '*.data.gov', category: low}\n"
        "  - {domain: 'open.data.gov', category: academic}\n"
    )
    cats = DomainPolicy.load(path)
    assert cats.category("www.nih.gov") == "government"
    assert cats.category("x.data.gov") == "low"
    assert cats.category("open.data.gov") == "academic"
    assert cats.category("example.com") == "unverified"


def test_bundled_corpus_reads_and_reports_broken_files() -> None:
    items = list(iter_documents([ROOT / "config/examples/corpus"]))
    docs = [i for i in items if isinstance(i, SourceDocument)]
    skipped = {Path(i.origin).name: i.reason for i in items if isinstance(i, SkippedDocument)}
    assert "not valid UTF-8" in skipped["broken_encoding.txt"]
    assert skipped["empty.md"] == "empty file"
    assert len(docs) >= 35
    html = [d for d in docs if d.extraction_method == "trafilatura"]
    assert html
    assert all("cookie" not in d.text.lower() for d in html)  # boilerplate footers dropped
    abstracts = [d for d in docs if d.page_type == "academic"]
    assert all(d.doi and d.year for d in abstracts)


def test_vector_index_is_safe_under_concurrent_adds_and_searches() -> None:
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(8)
    vectors = unit(rng.normal(size=(800, 16)).tolist())
    index = FragmentIndex(16, None, kind="hnsw")

    def add(chunk: int) -> int:
        ids = [f"frg_{i}" for i in range(chunk * 100, chunk * 100 + 100)]
        return index.add(
            ids + ids[:10], np.vstack([vectors[chunk * 100 : chunk * 100 + 100], vectors[chunk * 100 :][:10]])
        )

    def search(_: int) -> int:
        return sum(len(h) for h in index.search(vectors[:20], k=3))

    with ThreadPoolExecutor(max_workers=8) as pool:  # adds and searches interleaved
        futures = [(pool.submit(add, c), pool.submit(search, c)) for c in range(8)]
        added = [a.result() for a, _ in futures]
        assert all(s.result() >= 0 for _, s in futures)
    assert sum(added) == 800 == len(index)
    assert len(index.ids()) == 800
    hits = index.search(vectors[100:110], k=1)
    assert [h[0][0] for h in hits] == [f"frg_{i}" for i in range(100, 110)]
