"""The notebook in notebooks/ runs top to bottom against a real `lyra serve` (real Neo4j, real models)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from lyra.bootstrap import Services
from tests.support.helpers import ROOT, claim_materials, neo4j_env

pytestmark = [pytest.mark.neo4j, pytest.mark.models]


def test_rest_api_notebook_executes_and_plots(graph: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in neo4j_env(graph.settings).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LYRA_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("LYRA_URL", raising=False)
    # the kernel is this interpreter's (the venv's), found through PATH
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    path = ROOT / "notebooks" / "rest_api_tour.ipynb"
    notebook = nbformat.read(path, as_version=4)
    plot = ROOT / "artifacts" / "notebook_confidence.png"
    plot.unlink(missing_ok=True)
    NotebookClient(
        notebook, timeout=2400, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    outputs = "".join(
        out.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
    )
    assert "job(s) queued" in outputs and "evidence" in outputs
    assert plot.exists() and plot.stat().st_size > 10_000
    claims = claim_materials(graph, "notebook_tour", evidence_limit=0)
    assert len(claims) == 3 and all(c.evidence_count >= 1 for c in claims)
