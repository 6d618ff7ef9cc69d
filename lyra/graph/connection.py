"""Which Neo4j to talk to (NEO4J_URI when set, else the managed local instance), and neomodel bound to it.

neomodel runs every query it issues (node reads and saves, relationship managers, schema and version checks) through
one ``QueryRunner`` shared by ``neomodel.db`` and its collaborators. :func:`bind_neomodel` replaces that runner with
:class:`InstrumentedQueryRunner`, so neomodel's queries follow GraphStore's policy: timed, logged as slow above
``slow_query_seconds``, the same query timeout, and driver or neomodel errors raised as :class:`LyraError`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import neo4j
from neo4j import Session
from neo4j import Transaction as DriverTransaction
from neomodel import db as neomodel_db
from neomodel import get_config as neomodel_config
from neomodel.exceptions import ConstraintValidationFailed, InflateError
from neomodel.sync_.connection import ConnectionManager
from neomodel.sync_.query import QueryRunner

from lyra.core.errors import ConfigError, ConflictError, GraphUnavailableError, InvalidGraphDataError
from lyra.core.settings import Settings
from lyra.graph.server import NEO4J_USERNAME, LocalNeo4j
from lyra.graph.store import log_query_time, open_driver, translate_errors

QUERY_PREVIEW_CHARS = 100


@dataclass(frozen=True)
class ConnectionInfo:
    uri: str
    username: str
    managed: bool
    browser_url: str | None


def resolve_connection(settings: Settings) -> tuple[ConnectionInfo, str]:
    """Return where to connect and the password to use."""
    if settings.neo4j.neo4j_uri:
        if settings.neo4j.neo4j_password is None:
            raise ConfigError("NEO4J_URI is set but NEO4J_PASSWORD is not")
        browser = None
        host = settings.neo4j.neo4j_uri.split("://", 1)[1].split(":", 1)[0].split("/", 1)[0]
        if host in ("127.0.0.1", "localhost"):
            browser = f"http://{host}:7474/browser/"
        info = ConnectionInfo(settings.neo4j.neo4j_uri, settings.neo4j.neo4j_username, False, browser)
        return info, settings.neo4j.neo4j_password.get_secret_value()
    local = LocalNeo4j(settings)
    if local.pid() is None:
        raise GraphUnavailableError(
            f"the managed Neo4j instance {local.instance!r} is not running and NEO4J_URI is not set",
            hint="run `lyra neo4j start`, or set NEO4J_URI/NEO4J_USERNAME/NEO4J_PASSWORD",
        )
    return ConnectionInfo(local.bolt_uri, NEO4J_USERNAME, True, local.browser_url), local.password()


def connect(settings: Settings) -> tuple[neo4j.Driver, ConnectionInfo]:
    info, password = resolve_connection(settings)
    driver = open_driver(info.uri, info.username, password)
    try:
        bind_neomodel(driver, settings)
    except BaseException:
        driver.close()
        raise
    return driver, info


def bind_neomodel(driver: neo4j.Driver, settings: Settings) -> None:
    """Point neomodel's process-wide connection at ``driver`` (it shares it and never closes it), with
    GraphStore's database, query timeout, slow-query threshold and error translation."""
    config = neomodel_config()
    config.database_name = settings.neo4j.neo4j_database
    config.transaction_timeout = settings.graph.query_timeout
    instrument_neomodel(settings.graph.slow_query_seconds)
    neomodel_db.set_connection(driver=driver)


def describe_query(query: str) -> str:
    """How a neomodel query is named in logs and errors: ``neomodel query `MATCH (n:Task) ...```."""
    text = re.sub(r"\s+", " ", query).strip()
    if len(text) > QUERY_PREVIEW_CHARS:
        text = text[: QUERY_PREVIEW_CHARS - 3] + "..."
    return f"neomodel query `{text}`"


@contextmanager
def translate_neomodel_errors(what: str) -> Iterator[None]:
    """translate_errors, plus what neomodel makes of driver errors (constraint violations) and of nodes it
    cannot inflate into their class (a property value of the wrong type or outside its choices)."""
    try:
        with translate_errors(what):
            yield
    except ConstraintValidationFailed as exc:  # UniqueProperty included
        raise ConflictError(f"{what} violates a graph constraint: {exc}") from None
    except InflateError as exc:
        raise InvalidGraphDataError(
            f"{what} read a node Lyra cannot map: {exc}", hint="fix the property in Neo4j Browser"
        ) from None


class InstrumentedQueryRunner(QueryRunner):
    """neomodel's query runner under GraphStore's policy: every query timed, slow ones logged, errors translated.

    Both ways neomodel runs Cypher pass here: ``_run_cypher_query`` (``db.cypher_query``, saves, deletes, schema
    and version checks) and ``_stream_cypher_query`` (iterating a NodeSet). Objects are inflated inside them, so a
    node neomodel cannot inflate surfaces as :class:`InvalidGraphDataError` too.
    """

    def __init__(self, connection: ConnectionManager, slow_seconds: float) -> None:
        super().__init__(connection)
        self.slow_seconds = slow_seconds

    def _run_cypher_query(
        self,
        session: Session | DriverTransaction,
        query: str,
        params: dict[str, Any],
        handle_unique: bool,
        retry_on_session_expire: bool,
        resolve_objects: bool,
    ) -> tuple[list[Any], tuple[str, ...]]:
        what = describe_query(query)
        start = time.perf_counter()
        with translate_neomodel_errors(what):
            result = super()._run_cypher_query(
                session, query, params, handle_unique, retry_on_session_expire, resolve_objects
            )
        log_query_time(what, time.perf_counter() - start, self.slow_seconds)
        return result

    def _stream_cypher_query(
        self,
        session: Session | DriverTransaction,
        query: str,
        params: dict[str, Any],
        handle_unique: bool,
        resolve_objects: bool,
    ) -> Iterator[tuple[list[Any], tuple[str, ...]]]:
        what = describe_query(query)
        start = time.perf_counter()
        with translate_neomodel_errors(what):
            yield from super()._stream_cypher_query(session, query, params, handle_unique, resolve_objects)
        log_query_time(what, time.perf_counter() - start, self.slow_seconds)


def instrument_neomodel(slow_seconds: float) -> InstrumentedQueryRunner:
    """Install :class:`InstrumentedQueryRunner` as the runner ``neomodel.db`` and its connection and schema
    managers share (neomodel 7 composes them around one runner); idempotent, updates the threshold."""
    runner = neomodel_db._query
    if not isinstance(runner, InstrumentedQueryRunner):
        runner = InstrumentedQueryRunner(neomodel_db._connection, slow_seconds)
        neomodel_db._query = runner
        neomodel_db._connection._query = runner
        neomodel_db._schema._query = runner
    runner.slow_seconds = slow_seconds
    return runner
