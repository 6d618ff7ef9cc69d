"""The scale benchmark's generator, ground truth and SQLite reference path; get_materials' cursor encoding."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from benchmarks.scale_data import generate, sizes
from benchmarks.scale_sqlite import SqliteReference
from lyra.core.errors import InvalidInputError
from lyra.core.ids import text_hash
from lyra.models.confidence import EdgeEvidence, beta_stats, reference_alpha_beta
from lyra.services.materials import beta_columns, decode_cursor, encode_cursor


def test_generated_graph_has_the_issue_shape() -> None:
    data = generate(200, 2000, 400, "t1", seed=3)
    fragments, pages = sizes(2000)
    assert (fragments, pages) == (1000, 200)
    assert len(data.fragment_texts) == fragments and len(data.page_urls) == pages
    assert len(set(zip(data.edge_fragment, data.edge_claim, strict=True))) == 2000  # unique (fragment, claim) pairs
    assert all(0.0 <= w < 1.0 for w in data.edge_confidence)
    assert set(Counter(data.edge_relation)) == {"SUPPORTS", "REFUTES", "NEUTRAL"}
    assert min(Counter(data.edge_relation).values()) > 2000 / 3 * 0.8  # uniform over the three
    pairs = list(zip(data.cite_citing, data.cite_cited, strict=True))
    assert len(pairs) == 400 and len(set(pairs)) == 400 and all(a != b for a, b in pairs)
    assert data.fragment_hashes == [text_hash(t) for t in data.fragment_texts]
    assert all(url.startswith(data.url_prefix) for url in data.page_urls)
    assert generate(200, 2000, 400, "t1", seed=3).edge_confidence == data.edge_confidence  # seeded


def test_impossible_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="unique pairs"):
        generate(1, 10, 0, "t")
    with pytest.raises(ValueError, match="page pairs"):
        generate(10, 10, 100, "t")


def test_ground_truth_is_the_reference_formula() -> None:
    data = generate(50, 600, 10, "t2", seed=4)
    for claim in range(50):
        edges = [
            EdgeEvidence(r, w)
            for c, r, w in zip(data.edge_claim, data.edge_relation, data.edge_confidence, strict=True)
            if c == claim
        ]
        posterior = reference_alpha_beta(edges)
        assert (data.alpha[claim], data.beta[claim]) == pytest.approx((posterior.alpha, posterior.beta), abs=1e-12)
        assert data.counts[claim] == (posterior.supports_count, posterior.refutes_count, posterior.neutral_count)


def test_sqlite_reference_scores_match_the_ground_truth_and_limits_evidence(tmp_path: Path) -> None:
    data = generate(40, 800, 50, "t3", seed=5)
    reference = SqliteReference(tmp_path / "ref.sqlite", "task_t3")
    try:
        reference.load(data)
        index = {cid: i for i, cid in enumerate(reference.claim_ids)}
        scores = reference.scores()
        assert len(scores) == 40
        for cid, alpha, beta, confidence in scores:
            i = index[cid]
            assert (alpha, beta) == pytest.approx((data.alpha[i], data.beta[i]), abs=1e-12)
            assert confidence == pytest.approx(data.alpha[i] / (data.alpha[i] + data.beta[i]), abs=1e-12)
        top = reference.materials(3)
        assert len(top) == 40 and all(len(c["evidence"]) <= 3 for c in top)
        every = {c["claim_id"]: c for c in reference.materials(1000)}
        for claim in top:
            items = every[claim["claim_id"]]["evidence"]
            assert len(items) == sum(data.counts[index[claim["claim_id"]]])
            assert claim["evidence"] == items[: len(claim["evidence"])]  # the same order, cut at the limit
    finally:
        reference.close()


def test_vectorised_statistics_equal_beta_stats_to_the_last_bit() -> None:
    from lyra.models.confidence import Posterior

    alphas = [1.0, 1.0, 3.7, 1.25, 12.5]
    betas = [1.0, 2.9, 1.0, 1.25, 0.5 + 1.0]
    confidence, uncertainty, controversy = beta_columns(alphas, betas)
    for i, (a, b) in enumerate(zip(alphas, betas, strict=True)):
        stats = beta_stats(Posterior(a, b))
        assert (confidence[i], uncertainty[i], controversy[i]) == (
            stats.confidence,
            stats.uncertainty,
            stats.controversy,
        )


def test_cursor_round_trip_and_refusals() -> None:
    cursor = encode_cursor("task_a", "2025-11-24T04:02:39.123456789Z", "clm_1")
    assert decode_cursor(cursor, "task_a") == ("2025-11-24T04:02:39.123456789Z", "clm_1")
    for bad in ("", "%%%", "bm90IGpzb24"):
        with pytest.raises(InvalidInputError) as info:
            decode_cursor(bad, "task_a")
        assert info.value.field == "cursor"
    with pytest.raises(InvalidInputError, match="task_a"):
        decode_cursor(cursor, "task_b")
