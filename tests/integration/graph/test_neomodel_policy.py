"""Every query neomodel issues follows GraphStore's policy: timed, logged when slow, errors as LyraError."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from neomodel import db as neomodel_db

from lyra.bootstrap import Services
from lyra.core.errors import ConflictError, GraphQueryError, InvalidGraphDataError
from lyra.graph.connection import InstrumentedQueryRunner, instrument_neomodel
from lyra.graph.nodes import TaskNode

pytestmark = pytest.mark.neo4j


@pytest.fixture
def every_query_is_slow(graph: Services) -> Iterator[None]:
    instrument_neomodel(0.0)
    yield
    instrument_neomodel(graph.settings.graph.slow_query_seconds)


def test_neomodel_and_its_connection_and_schema_managers_share_the_instrumented_runner(graph: Services) -> None:
    runner = neomodel_db._query
    assert isinstance(runner, InstrumentedQueryRunner)
    assert neomodel_db._connection._query is runner and neomodel_db._schema._query is runner
    assert runner.slow_seconds == graph.settings.graph.slow_query_seconds


def test_a_query_neo4j_rejects_through_neomodel_is_a_graph_query_error(graph: Services) -> None:
    with pytest.raises(GraphQueryError, match=r"neomodel query `RETURN 1 \+` failed: Neo\.ClientError"):
        neomodel_db.cypher_query("RETURN 1 +")


def test_saving_a_second_task_node_with_the_same_id_is_a_conflict(graph: Services) -> None:
    TaskNode(uid="twice", hypothesis="first").save()
    with pytest.raises(ConflictError, match="violates a graph constraint"):
        TaskNode(uid="twice", hypothesis="second").save()


def test_a_node_neomodel_cannot_inflate_is_invalid_graph_data_not_a_python_error(graph: Services) -> None:
    graph.store.driver.execute_query(
        "CREATE (:Task {id: 'by_hand', hypothesis: 'h', status: 'active'})", database_=graph.store.database
    )
    with pytest.raises(InvalidGraphDataError, match="Invalid choice: active"):
        TaskNode.nodes.get(uid="by_hand")


def test_a_streamed_neomodel_query_is_translated_too(graph: Services) -> None:
    with graph.store.driver.session(database=graph.store.database) as session:
        stream = neomodel_db._stream_cypher_query(session, "RETURN 1 +", {}, True, False)
        with pytest.raises(GraphQueryError, match="neomodel query"):
            list(stream)


@pytest.mark.usefixtures("every_query_is_slow")
def test_neomodel_queries_above_the_threshold_are_logged_as_slow(
    graph: Services, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="lyra.graph.store"):
        TaskNode(uid="timed", hypothesis="h").save()
        assert TaskNode.nodes.get_or_none(uid="timed") is not None
    slow = [r.getMessage() for r in caplog.records if r.getMessage().startswith("slow query neomodel query `")]
    assert any("CREATE (n:Task" in m for m in slow), slow
    assert any("MATCH (task:Task)" in m for m in slow), slow
