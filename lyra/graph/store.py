"""GraphStore: the one choke point through which every Cypher statement runs.

It routes each named statement by its declared mode (read → read transaction, write → write
transaction, ``transactions: auto`` → auto-commit for ``CALL {} IN TRANSACTIONS``), times it, logs
slow ones, and translates driver errors into :class:`~lyra.core.errors.LyraError`.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import neo4j
from neo4j import GraphDatabase, ManagedTransaction, Query
from neo4j import exceptions as neo4j_errors

from lyra.core.errors import (
    ConflictError,
    GraphQueryError,
    GraphUnavailableError,
    InvalidInputError,
    LyraError,
    QueryFailed,
    QueryMemoryExceeded,
    QueryRefused,
    QuerySyntaxError,
    QueryTimeout,
    ResultTooLarge,
)
from lyra.core.settings import Settings
from lyra.graph.catalog import CypherCatalog, CypherQuery
from lyra.graph.query_guard import json_size

log = logging.getLogger(__name__)
T = TypeVar("T")
Row = dict[str, Any]


def to_plain(value: Any) -> Any:
    """Neo4j values → plain Python/JSON values (temporal types become ISO-8601 strings)."""
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if hasattr(value, "iso_format"):
        return value.iso_format()
    return value


def log_query_time(what: str, elapsed: float, slow_seconds: float) -> None:
    """The one slow-query policy: a warning at or above ``slow_seconds``, else a debug line."""
    if elapsed >= slow_seconds:
        log.warning("slow query %s took %.2fs", what, elapsed)
    else:
        log.debug("%s took %.3fs", what, elapsed)


@contextmanager
def translate_errors(what: str) -> Iterator[None]:
    """Map driver exceptions to Lyra's error tree (one place for the whole code base)."""
    try:
        yield
    except LyraError:
        raise
    except neo4j_errors.AuthError as exc:
        raise GraphUnavailableError(
            f"Neo4j refused the credentials while running {what}: {exc.message}",
            hint="check NEO4J_USERNAME / NEO4J_PASSWORD, or `lyra neo4j env` for the managed instance",
        ) from None
    except (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired) as exc:
        raise GraphUnavailableError(
            f"Neo4j is not reachable while running {what}: {exc}",
            hint="start it with `lyra neo4j start`, or set NEO4J_URI to a running server",
        ) from None
    except neo4j_errors.ConstraintError as exc:
        raise ConflictError(f"{what} violates a graph constraint: {exc.message}") from None
    except neo4j_errors.Neo4jError as exc:
        raise GraphQueryError(f"{what} failed: {exc.code}: {exc.message}") from None
    except OverflowError:
        raise InvalidInputError(
            "params", "a number is too large for Neo4j (integers are 64-bit)", hint=f"while running {what}"
        ) from None
    except neo4j_errors.DriverError as exc:
        raise GraphUnavailableError(f"Neo4j driver error while running {what}: {exc}") from None


# Neo4j's answers to a caller's ad-hoc Cypher that are the caller's fault (4xx), by status code.
_ADHOC_PLAN_ERRORS = (
    "Neo.ClientError.Statement.SyntaxError",
    "Neo.ClientError.Statement.SemanticError",
    "Neo.ClientError.Statement.ParameterMissing",
    "Neo.ClientError.Statement.ParameterNotProvided",
    "Neo.ClientError.Statement.UnsupportedOperationError",
    "Neo.ClientError.Statement.NotSystemDatabaseError",
    "Neo.ClientError.Procedure.ProcedureNotFound",
)
_ADHOC_TIMEOUTS = (
    "Neo.ClientError.Transaction.TransactionTimedOut",  # and ...TransactionTimedOutClientConfiguration
    "Neo.ClientError.Transaction.Terminated",
    "Neo.TransientError.Transaction.Terminated",
    "Neo.TransientError.Transaction.LockClientStopped",
)
_ADHOC_REFUSALS = ("Neo.ClientError.Security.Forbidden", "Neo.ClientError.Statement.AccessMode")
_ADHOC_MEMORY = ("Neo.TransientError.General.MemoryPoolOutOfMemoryError", "Neo.TransientError.General.OutOfMemoryError")
# Neo4j 5.26 fails allShortestPaths/shortestPath between a node and itself at run time with this DatabaseError.
_SHORTEST_PATH_SAME_NODE = "shortest path algorithm does not work when the start and end nodes are the same"
# How long past its timeout the door waits for Neo4j to stop a caller's query before answering query_timeout itself.
ADHOC_GRACE_SECONDS = 3.0
_ADHOC_TAG = "lyra_adhoc"  # the transaction metadata key that finds a caller's query in SHOW TRANSACTIONS


@contextmanager
def translate_adhoc_errors(timeout: float | None = None, *, planning: bool = False) -> Iterator[None]:
    """Map Neo4j's answers to a *caller's* Cypher (query_graph) to the caller's errors: syntax and planning errors,
    timeouts and terminations, forbidden operations and other client errors are 4xx with a specific code; so is a
    server error while only *planning* the caller's text (Neo4j 5.26 fails ``EXPLAIN *`` with an internal error).
    Server errors while running and connection failures keep :func:`translate_errors`' mapping."""
    with translate_errors("the ad-hoc query"):
        try:
            yield
        except neo4j_errors.Neo4jError as exc:
            code, message = exc.code or "", exc.message or ""
            if code.startswith(_ADHOC_PLAN_ERRORS):
                raise QuerySyntaxError(
                    "cypher", f"Neo4j cannot plan it: {message}", hint="check the syntax and labels; $params for values"
                ) from None
            if code.startswith(_ADHOC_TIMEOUTS):
                limit = f"its {timeout:g}s limit" if timeout is not None else "its time limit"
                what = "ran past " + limit if "TimedOut" in code else "was terminated before it finished"
                raise QueryTimeout(
                    "cypher", f"the query {what} ({code})", hint="narrow the MATCH, add a LIMIT, or use a named view"
                ) from None
            if code.startswith(_ADHOC_REFUSALS):
                raise QueryRefused("cypher", f"Neo4j refused it: {message}") from None
            if code.startswith(_ADHOC_MEMORY) or "OutOfMemoryError" in message:
                raise QueryMemoryExceeded(
                    "cypher",
                    f"the query needs more memory than Neo4j allows one transaction ({code}: {message[:300]})",
                    hint="narrow the MATCH, add a LIMIT, or aggregate before collecting",
                ) from None
            if _SHORTEST_PATH_SAME_NODE in message:
                raise QueryFailed(
                    "cypher",
                    f"Neo4j could not run it: the {_SHORTEST_PATH_SAME_NODE} ({code})",
                    hint="add WHERE a <> b before the shortest-path MATCH",
                ) from None
            if code.startswith("Neo.ClientError."):
                raise QueryFailed("cypher", f"Neo4j could not run it: {code}: {message}") from None
            if planning and code.startswith("Neo.DatabaseError."):
                raise QuerySyntaxError(
                    "cypher", f"Neo4j failed to plan it ({code}: {message})", hint="check the syntax"
                ) from None
            raise
        except UnicodeEncodeError:
            raise InvalidInputError("params", "a string is not valid Unicode (a lone surrogate)") from None


class GraphStore:
    """Runs the catalog's statements against one Neo4j database."""

    def __init__(self, driver: neo4j.Driver, catalog: CypherCatalog, settings: Settings) -> None:
        self.driver = driver
        self.catalog = catalog
        self.database = settings.neo4j.neo4j_database
        self.timeout = settings.graph.query_timeout
        self.slow_seconds = settings.graph.slow_query_seconds

    # ------------------------------------------------------------------ basics
    def close(self) -> None:
        self.driver.close()

    def ping(self) -> str:
        """Check connectivity and return the server's version string."""
        with translate_errors("a connectivity check"):
            info = self.driver.get_server_info()
            return str(info.agent)

    def _timed(self, query: CypherQuery, fn: Callable[[], T]) -> T:
        what = f"cypher/{query.name}.cypher"
        start = time.perf_counter()
        with translate_errors(what):
            result = fn()
        log_query_time(what, time.perf_counter() - start, self.slow_seconds)
        return result

    def _query(self, query: CypherQuery) -> Query:
        return Query(query.text, timeout=self.timeout)

    # ------------------------------------------------------------- named runs
    def run(self, name: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        """Run the named statement in the transaction kind its file declares; return rows as dicts."""
        query = self.catalog[name]
        args = dict(params or {})
        if query.auto_commit or query.mode == "schema":
            return self._timed(query, lambda: self._auto_commit(query, args))
        return self._timed(query, lambda: self._managed(query, lambda: args, read=query.mode == "read"))

    def run_fresh(self, name: str, make_params: Callable[[], Mapping[str, Any]]) -> list[Row]:
        """Run a named read or write statement whose parameters are built anew by ``make_params`` at each attempt.

        The driver retries a transaction after a transient error or a lost connection, up to seconds later (its
        back-off), and the attempt that failed may have committed without its answer arriving. A parameter that
        holds the moment of the call (a clock reading) would be stale by then: a rate slot confirmed at the retry
        with the first attempt's time records a send that really leaves later, and the next request goes out too
        close to it. ``make_params`` is called inside each attempt, so such values are read when the attempt runs."""
        query = self.catalog[name]
        if query.auto_commit or query.mode == "schema":
            raise GraphQueryError(f"cypher/{name}.cypher is not run in a managed transaction")
        return self._timed(query, lambda: self._managed(query, lambda: dict(make_params()), read=query.mode == "read"))

    def _auto_commit(self, query: CypherQuery, args: dict[str, Any]) -> list[Row]:
        with self.driver.session(database=self.database) as session:
            result = session.run(self._query(query), args)
            return [dict(record.items()) for record in result]  # type: ignore[no-untyped-call]

    def _managed(self, query: CypherQuery, args: Callable[[], dict[str, Any]], *, read: bool) -> list[Row]:
        def work(tx: ManagedTransaction) -> list[Row]:
            # Named statements return property values and maps, never nodes or relationships, so the records
            # need no deep conversion (record.data() doubled the time of large results).
            return [dict(record.items()) for record in tx.run(query.text, args())]  # type: ignore[no-untyped-call]

        with self.driver.session(database=self.database) as session:
            if read:
                return session.execute_read(work)
            return session.execute_write(work)

    def write_transaction(self, what: str, work: Callable[[Transaction], T]) -> T:
        """Run several named statements in one write transaction (all or nothing).

        ``work`` may be retried by the driver on transient errors, so it must be idempotent.
        """

        def managed(tx: ManagedTransaction) -> T:
            return work(Transaction(self.catalog, tx))

        start = time.perf_counter()
        with translate_errors(what), self.driver.session(database=self.database) as session:
            result = session.execute_write(managed)
        log.debug("%s took %.3fs", what, time.perf_counter() - start)
        return result

    def explain(self, name: str, params: Mapping[str, Any] | None = None) -> str:
        """EXPLAIN the named statement and return Neo4j's query type: 'r', 'w', 'rw' or 's'."""
        query = self.catalog[name]
        with (
            translate_errors(f"EXPLAIN cypher/{name}.cypher"),
            self.driver.session(database=self.database) as session,
        ):
            summary = session.run("EXPLAIN " + query.text, dict(params or {})).consume()
            return str(summary.query_type)

    def run_adhoc_read(
        self, cypher: str, params: Mapping[str, Any], row_limit: int, timeout: float, max_bytes: int
    ) -> tuple[list[Row], bool]:
        """Run caller-supplied Cypher in a READ transaction with a timeout: at most ``row_limit`` rows and at most
        ``max_bytes`` of them as JSON.

        Returns (rows, truncated). The caller checks the statement and its plan first (lyra/graph/query_guard.py);
        the read transaction is the last line of defence (the server refuses writes inside it). Records are
        streamed and measured one by one: past the byte budget the transaction is rolled back and
        :class:`ResultTooLarge` raised, so no huge result is held or returned. No retries: a caller's query that
        failed once fails again. The answer comes within ``timeout`` + :data:`ADHOC_GRACE_SECONDS` whatever Neo4j
        does (see :meth:`_bounded`).
        """

        def work(tag: str) -> tuple[list[Row], bool]:
            with (
                translate_adhoc_errors(timeout),
                self.driver.session(
                    database=self.database, default_access_mode=neo4j.READ_ACCESS, fetch_size=min(row_limit + 1, 100)
                ) as session,
                session.begin_transaction(timeout=timeout, metadata={_ADHOC_TAG: tag}) as tx,
            ):
                return self._read_rows(tx.run(cypher, dict(params)), row_limit, max_bytes)

        return self._bounded(work, timeout)

    @staticmethod
    def _read_rows(result: neo4j.Result, row_limit: int, max_bytes: int) -> tuple[list[Row], bool]:
        rows: list[Row] = []
        used = 2  # the list's brackets
        for record in result:
            if len(rows) == row_limit:
                return rows, True
            row = to_plain(record.data())
            size = json_size(row, max_bytes - used) + 1  # and a comma
            if used + size > max_bytes:
                if not rows:
                    raise ResultTooLarge(
                        "cypher",
                        f"the first row alone is more than the {max_bytes:,}-byte result budget",
                        hint="return smaller values (e.g. substring(), size(), a LIMIT inside collect())",
                    )
                raise ResultTooLarge(
                    "options.row_limit",
                    f"the result passed the {max_bytes:,}-byte budget after {len(rows)} rows",
                    hint=f"set options.row_limit to {len(rows)} or less, or return fewer or smaller columns",
                )
            used += size
            rows.append(row)
        return rows, False

    def _bounded(self, work: Callable[[str], T], timeout: float) -> T:
        """Run ``work(tag)`` (which tags its transaction with ``tag``) on a worker thread and wait at most
        ``timeout`` + ADHOC_GRACE_SECONDS. Neo4j stops most queries at their timeout itself; work inside one
        expression or one function call it does not stop, and the driver would wait for it. Past the wait the
        transaction is terminated server-side (found by its tag in SHOW TRANSACTIONS, which Community allows for
        one's own transactions) and :class:`QueryTimeout` raised at once; the worker thread ends, and its session
        and connection go back to the pool, when Neo4j answers the terminated transaction."""
        tag = uuid.uuid4().hex
        outcome: list[tuple[bool, Any]] = []
        done = threading.Event()

        def run() -> None:
            try:
                outcome.append((True, work(tag)))
            except BaseException as exc:  # handed to the waiting thread
                outcome.append((False, exc))
            finally:
                done.set()

        threading.Thread(target=run, name=f"lyra-adhoc-{tag[:8]}", daemon=True).start()
        if not done.wait(timeout + ADHOC_GRACE_SECONDS):
            threading.Thread(
                target=self._terminate_tagged, args=(tag,), name="lyra-adhoc-terminate", daemon=True
            ).start()
            raise QueryTimeout(
                "cypher",
                f"the query ran past its {timeout:g}s limit and Neo4j had not stopped it {ADHOC_GRACE_SECONDS:g}s "
                "later; its transaction is being terminated",
                hint="narrow the MATCH, add a LIMIT, or use a named view",
            )
        ok, value = outcome[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def _terminate_tagged(self, tag: str) -> None:
        """Terminate the transactions tagged ``tag`` (a caller's query that outlived its timeout)."""
        try:
            with self.driver.session(database=self.database) as session:
                ids = [
                    str(record["transactionId"])
                    for record in session.run(
                        f"SHOW TRANSACTIONS YIELD transactionId, metaData WHERE metaData.{_ADHOC_TAG} = $tag "
                        "RETURN transactionId",
                        tag=tag,
                    )
                ]
                if ids:
                    session.run("TERMINATE TRANSACTIONS $ids", ids=ids).consume()
            log.warning("ad-hoc query %s outlived its timeout; terminated transactions %s", tag[:8], ids or "none")
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
            log.warning("ad-hoc query %s outlived its timeout and could not be terminated: %s", tag[:8], exc)

    def explain_adhoc(
        self, cypher: str, params: Mapping[str, Any], timeout: float | None = None
    ) -> tuple[str, dict[str, Any] | None]:
        """EXPLAIN caller-supplied Cypher: (Neo4j's query type 'r'/'w'/'rw'/'s', the plan tree of ``summary.plan``).
        Nothing runs; errors are the caller's (:func:`translate_adhoc_errors`). With ``timeout``, planning is
        bounded like a run (:meth:`_bounded`)."""

        def work(tag: str | None) -> tuple[str, dict[str, Any] | None]:
            query = Query("EXPLAIN " + cypher, timeout=timeout, metadata={_ADHOC_TAG: tag} if tag else None)
            with translate_adhoc_errors(planning=True), self.driver.session(database=self.database) as session:
                summary = session.run(query, dict(params)).consume()
                plan = summary.plan
                return str(summary.query_type), dict(plan) if isinstance(plan, Mapping) else None

        if timeout is None:
            return work(None)
        return self._bounded(work, timeout)

    def apply_schema(self) -> list[str]:
        """Apply every ``cypher/schema/*.cypher`` statement (each is idempotent)."""
        names = self.catalog.names("schema/")
        for name in names:
            self.run(name)
        self.run("admin/await_indexes", {"seconds": 300})
        # a graph from before the task-scoped READ relationship gets it once (see the statement)
        self.run("coverage/backfill_task_reads")
        # stance edges from before they named their judge get judge / judge_rank once
        self.run("evidence/backfill_edge_judges")
        return names


class Transaction:
    """Named statements inside one explicit write transaction (see GraphStore.write_transaction)."""

    def __init__(self, catalog: CypherCatalog, tx: ManagedTransaction) -> None:
        self._catalog = catalog
        self._tx = tx

    def run(self, name: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        query = self._catalog[name]
        if query.auto_commit or query.mode == "schema":
            raise GraphQueryError(f"cypher/{name}.cypher cannot run inside an explicit transaction")
        return [record.data() for record in self._tx.run(query.text, dict(params or {}))]


def open_driver(uri: str, username: str, password: str) -> neo4j.Driver:
    """Create a driver and check that it can talk to the server.

    ``bolt://`` talks to one server; ``neo4j://`` / ``neo4j+s://`` (a cluster, Aura) route: GraphStore runs a
    statement declared ``mode: read`` in a READ transaction, which a cluster serves from a follower or read
    replica, and writes go to the leader. Every session of the driver (GraphStore's and neomodel's) shares one
    bookmark manager, so a read always sees this process's earlier writes, wherever it is routed (causal
    consistency); what *other* processes wrote is seen once the serving member has it.
    """
    # Server notifications (e.g. "property key does not exist" before the first fragment has an embedding)
    # are noise for Lyra's fixed, EXPLAIN-tested statements.
    driver = GraphDatabase.driver(
        uri,
        auth=(username, password),
        connection_timeout=10,
        notifications_min_severity="OFF",
        bookmark_manager=GraphDatabase.bookmark_manager(),  # the default of every session this driver opens
    )
    try:
        with translate_errors(f"connecting to {uri}"):
            driver.verify_connectivity()
    except LyraError:
        driver.close()
        raise
    return driver
