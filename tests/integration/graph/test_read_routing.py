"""Reads go in READ transactions and writes in WRITE ones, which is what lets a routing driver (``neo4j://``,
``neo4j+s://``: a cluster, Aura) send reads to followers (real Neo4j, reached through the routing driver). A
single server already enforces the access mode, so a statement declared ``mode: read`` that writes is refused:
the declaration is what the transaction gets, not a comment."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from lyra.bootstrap import Services
from lyra.core.errors import GraphQueryError
from lyra.graph.catalog import CypherCatalog
from lyra.graph.store import GraphStore, open_driver

pytestmark = pytest.mark.neo4j
STATEMENTS = {
    "probe/count_probes": "// mode: read\nMATCH (n:RoutingProbe) RETURN count(n) AS n",
    "probe/create_probe": "// mode: write\nCREATE (n:RoutingProbe) RETURN count(n) AS n",
    "probe/create_probe_declared_read": "// mode: read\nCREATE (n:RoutingProbe) RETURN count(n) AS n",
}


@pytest.fixture
def routed_store(graph: Services, tmp_path: Path) -> Iterator[GraphStore]:
    for name, text in STATEMENTS.items():
        path = tmp_path / f"{name}.cypher"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    settings = graph.settings
    uri = re.sub(r"^bolt(\+s|\+ssc)?://", lambda m: f"neo4j{m.group(1) or ''}://", str(settings.neo4j.neo4j_uri))
    password = settings.neo4j.neo4j_password.get_secret_value() if settings.neo4j.neo4j_password else ""
    store = GraphStore(
        open_driver(uri, settings.neo4j.neo4j_username, password), CypherCatalog.load(tmp_path), settings
    )
    yield store
    store.close()


def test_reads_run_in_read_transactions_and_writes_in_write_ones_through_the_routing_driver(
    routed_store: GraphStore,
) -> None:
    assert routed_store.driver.get_server_info().address is not None  # a routing table was fetched and used
    assert routed_store.run("probe/create_probe") == [{"n": 1}]
    assert routed_store.run("probe/count_probes") == [{"n": 1}]  # a read sees the process's own write
    with pytest.raises(GraphQueryError, match="AccessMode"):
        routed_store.run("probe/create_probe_declared_read")
    assert routed_store.run("probe/count_probes") == [{"n": 1}]
