"""Every statement under cypher/ is valid Cypher on the live server and does what its header declares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lyra.bootstrap import Services
from lyra.core.errors import GraphQueryError
from lyra.graph.catalog import CypherCatalog, CypherQuery
from lyra.graph.store import GraphStore

pytestmark = pytest.mark.neo4j

EXPECTED_QUERY_TYPE = {"read": {"r"}, "write": {"w", "rw"}, "schema": {"s"}}


def dummy_params(query: CypherQuery) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in query.parameters:
        if name in ("rows", "ids", "kinds", "domains", "urls", "claims", "pairs", "keys", "marks") or name.endswith(
            "_ids"
        ):
            values[name] = []
        elif name in ("row", "run", "counts"):
            values[name] = {}
        elif name in (
            "batch_size",
            "limit",
            "seconds",
            "pages",
            "stale_seconds",
            "max_attempts",
            "evidence_limit",
            "pages_per_item",
            "version",
            "samples",
            "train_samples",
            "holdout_samples",
            "rules_version",
            "causes_per_claim",
            "keep_snapshots",
            "keep_runs",
            "every_seconds",
            "max_targets",
            "max_pages",
            "now_ms",
            "token",
            "calls",
            "tokens",
            "max_calls",
            "max_tokens",
            "attempts",
            "http_status",
        ):
            values[name] = 100
        elif name in (
            "immediate",
            "include_neutral",
            "include_not_adopted",
            "activate",
            "improves",
            "flagged",
            "override",
            "enabled",
        ):
            values[name] = True
        elif name in (
            "max_seconds",
            "a",
            "b",
            "accuracy",
            "brier",
            "ece",
            "mce",
            "ece_before",
            "ece_after",
            "brier_before",
            "brier_after",
            "now",
            "interval",
        ):
            values[name] = 1.5
        else:
            values[name] = "x"
    return values


def test_every_statement_explains_with_the_declared_mode(services: Services) -> None:
    checked = 0
    for query in services.store.catalog:
        if query.mode == "schema":
            continue  # schema commands cannot be EXPLAINed; see the test below
        query_type = services.store.explain(query.name, dummy_params(query))
        assert query_type in EXPECTED_QUERY_TYPE[query.mode], f"{query.name}: declared {query.mode}, got {query_type}"
        checked += 1
    assert checked >= 15


def test_schema_statements_are_idempotent_and_create_the_constraints(services: Services) -> None:
    services.store.apply_schema()
    services.store.apply_schema()  # second run must not fail
    records, _, _ = services.store.driver.execute_query(
        "SHOW CONSTRAINTS YIELD name", database_=services.store.database
    )
    names = {r["name"] for r in records}
    for expected in (
        "task_id_unique",
        "claim_id_unique",
        "page_url_unique",
        "page_doi_unique",
        "fragment_text_hash_unique",
        "supports_id_unique",
        "cites_id_unique",
    ):
        assert expected in names


def test_statement_declared_read_runs_in_a_read_transaction(services: Services, tmp_path: Path) -> None:
    """A write mis-declared as read is refused by the server, so the declaration is enforced."""
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "sneaky.cypher").write_text("// mode: read\nCREATE (:Sneaky) RETURN 1 AS x")
    store = GraphStore(services.store.driver, CypherCatalog.load(tmp_path), services.settings)
    with pytest.raises(GraphQueryError, match="sneaky"):
        store.run("bad/sneaky")
    assert store.explain("bad/sneaky") == "rw"
