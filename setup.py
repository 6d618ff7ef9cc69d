"""The build step pyproject.toml cannot express: the run-time files kept in the top-level ``cypher/`` and ``config/``
folders are copied into the wheel as ``lyra/_resources/...`` (``lyra/core/paths.py`` reads them there when Lyra runs
from an installed wheel; a checkout, editable installs included, reads the folders in place)."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent

# What Lyra reads at run time, relative to the repository root. Not packaged: config/eval (the labelled sets of
# `lyra eval` / `lyra train`, developer data read from a checkout) and the READMEs' neighbours in config/.
RESOURCES = (
    "cypher",
    "config/prompts",
    "config/stance",
    "config/stance_combiner.json",
    "config/learning/regression_pairs.jsonl",
    "config/neo4j/pom.xml",
    "config/domains.yaml",
    "config/examples",
)


class BuildPyWithResources(build_py):
    """``build_py`` that also copies :data:`RESOURCES` into ``<build>/lyra/_resources``."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return  # an editable install runs from the checkout and reads cypher/ and config/ where they are
        target = Path(self.build_lib) / "lyra" / "_resources"
        if target.exists():
            shutil.rmtree(target)  # a resource deleted from the source must not linger from an earlier build
        for relative in RESOURCES:
            source = ROOT / relative
            if not source.exists():
                raise FileNotFoundError(f"{relative} is listed in setup.py RESOURCES but missing from the source")
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, destination, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(source, destination)


setup(cmdclass={"build_py": BuildPyWithResources})
