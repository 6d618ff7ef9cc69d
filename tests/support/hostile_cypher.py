"""tests/data/hostile_cypher.yaml, loaded (shared by the unit and integration tests of the query door)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

PATH = Path(__file__).resolve().parents[1] / "data/hostile_cypher.yaml"


def load_corpus() -> list[dict[str, Any]]:
    """The entries, with ``cypher_repeat: [head, part, times, middle, closing]`` expanded to
    ``cypher = head + part * times + middle + closing * times`` (the deeply nested probes of the query door's work
    bounds)."""
    entries: list[dict[str, Any]] = yaml.safe_load(PATH.read_text(encoding="utf-8"))
    for entry in entries:
        if "cypher_repeat" in entry:
            head, part, times, middle, closing = entry.pop("cypher_repeat")
            entry["cypher"] = head + part * times + middle + closing * times
    return entries
