"""The command line starts fast: `lyra --help` and every `lyra CMD --help` load none of the heavy modules (the
models, the graph driver, the web servers, the services that use them); a command imports them when it runs."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from lyra.cli import app

ROOT = Path(__file__).resolve().parents[3]
HEAVY = (
    "torch",
    "transformers",
    "sentence_transformers",
    "faiss",
    "llama_cpp",
    "xllamacpp",
    "fastapi",
    "uvicorn",
    "mcp",
    "neo4j",
    "neomodel",
    "numpy",
    "httpx",
    "jinja2",
    "pydantic_settings",
    "lyra.bootstrap",
    "lyra.services",
    "lyra.graph",
    "lyra.ml",
    "lyra.sources",
)
# Runs in a fresh interpreter: the help of the root command and of every command and group, then the modules loaded.
PROBE = """
import json, sys
import typer.main
from typer.testing import CliRunner
from lyra.cli import app

def paths(command, prefix):
    yield prefix
    for name, sub in getattr(command, "commands", {}).items():
        yield from paths(sub, [*prefix, name])

runner = CliRunner()
commands = list(paths(typer.main.get_command(app), []))
codes = {" ".join(p) or "lyra": runner.invoke(app, [*p, "--help"]).exit_code for p in commands}
heavy = [h for h in json.loads(sys.argv[1]) if any(m == h or m.startswith(h + ".") for m in sys.modules)]
print(json.dumps({"codes": codes, "heavy": heavy}))
"""


def test_the_help_of_every_command_loads_no_heavy_module() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert result.returncode == 0, result.stderr
    probe = json.loads(result.stdout)
    assert len(probe["codes"]) > 40 and set(probe["codes"].values()) == {0}, probe["codes"]
    assert probe["heavy"] == []


def test_importing_the_command_line_loads_no_heavy_module() -> None:
    code = "import json, sys, lyra.cli; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)
    assert [h for h in HEAVY if any(m == h or m.startswith(h + ".") for m in loaded)] == []


def test_the_trainer_choices_the_help_names_are_the_trainers_own() -> None:
    from lyra.cli import train
    from lyra.ml.sentence_selector import SELECTORS
    from lyra.ml.stance_judge import LLM_FEATURE_SETS
    from lyra.services.training import DEFAULT_LLM_FEATURES

    assert train.DEFAULT_LLM_FEATURES == DEFAULT_LLM_FEATURES
    assert tuple(LLM_FEATURE_SETS) == train.LLM_FEATURE_SETS
    assert SELECTORS == train.SENTENCE_SELECTORS


def test_ingest_help_names_every_file_type_it_reads() -> None:
    from lyra.sources.local_files import SUPPORTED_SUFFIXES

    result = CliRunner().invoke(app, ["ingest", "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert "PDF" in result.output
    assert [s for s in sorted(SUPPORTED_SUFFIXES) if s not in result.output] == []


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_a_skipped_item_is_not_logged_while_the_summary_that_lists_it_is_gathered() -> None:
    from lyra.cli.common import shown_in_summary

    root, handler = logging.getLogger(), _Lines()
    root.addHandler(handler)
    try:
        with shown_in_summary():
            logging.getLogger("lyra.services.ingest").warning("skipped %s: %s", "a.docx", "unsupported file type .docx")
            logging.getLogger("lyra.services.jobs").warning("job %s %s%s", "job_1", "failed", ": no network")
            logging.getLogger("lyra.services.ingest").warning("something else happened")
        logging.getLogger("lyra.services.ingest").warning("skipped %s: %s", "b.docx", "unsupported file type .docx")
    finally:
        root.removeHandler(handler)
    assert handler.lines == ["something else happened", "skipped b.docx: unsupported file type .docx"]
