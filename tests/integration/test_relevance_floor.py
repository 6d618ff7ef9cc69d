"""`lyra eval relevance-floor` with the real offline embedder (MiniLM) on the 30-pair slices of real labelled data
in tests/data: the command fits a floor, prints its table and writes the JSON report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.helpers import ROOT

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
