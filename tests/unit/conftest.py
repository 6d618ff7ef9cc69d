"""The unit tests' level: no Neo4j, no model weights (a tiny randomly initialised model at most).

A unit test marked ``neo4j`` or ``models`` belongs under ``tests/integration/``: collecting one here is an error,
so `make test-unit` (which deselects those markers as a second guard) never silently skips a unit test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parent
NOT_HERE = ("neo4j", "models")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    misplaced = [
        f"{item.nodeid} (marked {marker})"
        for item in items
        if item.path.is_relative_to(UNIT)
        for marker in NOT_HERE
        if item.get_closest_marker(marker) is not None
    ]
    if misplaced:
        raise pytest.UsageError("unit tests need no Neo4j and no model weights: " + "; ".join(misplaced))
