"""`lyra eval relevance-floor` with the real offline embedder (MiniLM) on the 30-pair slices of real labelled data
in tests/data: the command fits a floor, prints its table and writes the JSON report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lyra.core.settings import Settings
from lyra.ml.factory import Models
from lyra.ml.relevance import relevance
from lyra.sources.chunking import chunk_text
from lyra.sources.local_files import SourceDocument, read_file
from tests.support.helpers import ROOT

pytestmark = [pytest.mark.models]
DATA = ROOT / "tests" / "data"


def test_eval_relevance_floor_fits_on_one_slice_and_measures_the_other(tmp_path: Path) -> None:
    report_path = tmp_path / "floor.json"
    command = [
        sys.executable, "-m", "lyra", "eval", "relevance-floor",
        "--fit", str(DATA / "stance_scifact_train_30.jsonl"),
        "--heldout", str(DATA / "stance_check_covid_dev_30.jsonl"),
        "--target", "0.9", "--per-claim", "3", "--json", str(report_path),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=os.environ, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "off-topic dropped" in done.stdout and "stance_check_covid_dev_30" in done.stdout
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["fitted"] and report["embedder"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert report["floor"] <= report["floor_exact"] < report["floor"] + 0.01
    fit, held = report["sets"]
    assert (fit["name"], fit["role"], held["role"]) == ("stance_scifact_train_30", "fit", "heldout")
    assert fit["relevant_pairs"] >= 20 and fit["recall"] >= 0.9  # 20 SUPPORT/CONTRADICT pairs, each with a rationale
    assert held["relevant_pairs"] >= 20 and held["nei_pairs"] > 0 and held["offtopic_pairs"] > 0
    for figure in ("recall", "cited_recall", "nei_kept", "offtopic_dropped"):
        assert 0.0 <= held[figure] <= 1.0, figure
    # a passage that states the verdict on a claim is, on real data, more related to it than a random one
    assert held["offtopic_dropped"] > 1.0 - held["recall"]
    assert held["pairs_per_second"] > 0.0 and report["texts_embedded"] > 0
    assert [row["w_emb"] for row in report["weight_grid"]] == pytest.approx([i / 10 for i in range(11)])


# the demo corpus's documents that take a side on their question (config/examples/corpus/README.md), and the ones
# written to be off every question
STANCE_DOCUMENTS = {
    "fasting": (
        "fasting_evidence_review.md",
        "fasting_tempo_trial_report.txt",
        "fasting_trial_news.html",
        "fasting_mixed_commentary.md",
        "fasting_adherence_analysis.txt",
        "fasting_lifestyle_blog.html",
    ),
    "microplastics": (
        "microplastics_northgate_study.md",
        "microplastics_utility_report.txt",
        "microplastics_news.html",
        "microplastics_lab_bulletin.txt",
        "microplastics_mixed_review.md",
        "microplastics_consumer_guide.html",
    ),
    "remote_work": (
        "remote_work_manager_survey.md",
        "remote_work_kestrel_analytics.txt",
        "remote_work_news.html",
        "remote_work_case_study.txt",
        "remote_work_mixed_essay.md",
        "remote_work_blog.html",
    ),
}
OFF_EVERY_QUESTION = (
    "bicycle_chain_care.txt",
    "football_match_report.html",
    "gardening_tomatoes.md",
    "lentil_soup_recipe.txt",
)


def test_the_default_floor_keeps_a_passage_of_every_demo_document_that_takes_a_side() -> None:
    """Per question of the demo corpus, each document that supports or refutes it has a passage at or above the
    default floor, and the documents written to be off topic have none for any question (the hand-written check
    of the floor fitted on real data; which of their passages fall below is listed in the README)."""
    settings = Settings()
    corpus = ROOT / "config" / "examples" / "corpus"
    questions = {q["id"]: q["claim"] for q in json.loads((corpus / "questions.json").read_text(encoding="utf-8"))}
    embedder = Models(settings).embedder

    def best(claim: str, name: str) -> float:
        documents = [d for d in read_file(corpus / name) if isinstance(d, SourceDocument)]
        texts = [p.text for d in documents for p in chunk_text(d.text, max_chars=settings.pipeline.chunk_max_chars)]
        assert texts, name
        vectors = embedder.embed([claim, *texts])
        scores = relevance(
            [claim],
            vectors[:1],
            texts,
            vectors[1:],
            w_emb=settings.pipeline.relevance_weight_embedding,
            w_terms=settings.pipeline.relevance_weight_terms,
        )
        return float(scores.max())

    for question, names in STANCE_DOCUMENTS.items():
        for name in names:
            assert best(questions[question], name) >= settings.pipeline.relevance_floor, (question, name)
    for name in OFF_EVERY_QUESTION:
        for claim in questions.values():
            assert best(claim, name) < settings.pipeline.relevance_floor, (claim, name)
