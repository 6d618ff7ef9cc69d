"""Where Lyra finds the files it reads at run time: the Cypher catalogue, prompts, the trained stance judge, ...

The sources are the top-level ``cypher/`` and ``config/`` folders of the repository. Two ways to run Lyra:

* from a source checkout (``pip install -e .``, or ``python -m lyra`` in the repository): the checkout's own folders
  are read, so an edit to ``cypher/`` or ``config/prompts`` takes effect at the next start, without a rebuild;
* from an installed wheel: the build copied the run-time parts of those folders into the package as
  ``lyra/_resources/cypher`` and ``lyra/_resources/config`` (``setup.py`` lists them), read through
  :mod:`importlib.resources`.

Every path is a setting (``LYRA_CYPHER_DIR``, ``LYRA_CONFIG_DIR``, ``LYRA_DOMAINS_FILE``, ``LYRA_EXAMPLES_DIR``, ...),
so a user of the wheel overrides the editable ones (the domain policy, the example corpus) by path.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def checkout_root() -> Path | None:
    """The source checkout this ``lyra`` package sits in, or None when it was installed from a wheel."""
    root = PACKAGE_DIR.parent
    if (root / "pyproject.toml").is_file() and (root / "cypher").is_dir() and (root / "config").is_dir():
        return root
    return None


def resource_root() -> Path:
    """The folder holding ``cypher/`` and ``config/``: the checkout's root, or the wheel's ``lyra/_resources``."""
    root = checkout_root()
    if root is not None:
        return root
    packaged = importlib.resources.files("lyra") / "_resources"
    if not isinstance(packaged, Path) or not packaged.is_dir():
        # a zipped or partial install: the catalogue and the model artifacts are read as plain files
        raise RuntimeError(
            f"Lyra's packaged resources are missing ({packaged}): install Lyra from its wheel (pip install lyra-*.whl) "
            "or run it from a source checkout; or point LYRA_CYPHER_DIR and LYRA_CONFIG_DIR at copies"
        )
    return packaged


def default_state_dir() -> Path:
    """A checkout keeps its state beside the code (the git-ignored ``.lyra/``); an installed Lyra in ``~/.lyra``."""
    root = checkout_root()
    return root / ".lyra" if root is not None else Path.home() / ".lyra"


def default_cypher_dir() -> Path:
    return resource_root() / "cypher"


def default_config_dir() -> Path:
    return resource_root() / "config"
