"""One exception root for everything Lyra raises on purpose.

Tree (``code`` in brackets; tests/unit/core/test_errors.py checks that this tree and the classes agree)::

    LyraError [lyra_error]
    ├── ConfigError [config_error]                      settings, configuration files or environment are unusable
    ├── InvalidInputError [invalid_input]               a request field is wrong (carries ``field``)
    │   ├── QueryRefused [query_refused]                the read-only query door does not allow what the Cypher uses
    │   ├── QuerySyntaxError [query_syntax]             Neo4j cannot parse or plan the caller's Cypher
    │   ├── QueryFailed [query_failed]                  Neo4j failed the caller's Cypher while running it
    │   ├── QueryTimeout [query_timeout]                the caller's Cypher ran past its time limit or was terminated
    │   ├── QueryMemoryExceeded [query_memory]          the caller's Cypher needed more memory than one query may use
    │   └── ResultTooLarge [result_too_large]           the result passed the byte budget (``LYRA_QUERY_MAX_BYTES``)
    ├── NotFoundError [not_found]                       a named object (task, claim, edge, view...) does not exist
    ├── ConflictError [conflict]                        the request clashes with what is stored
    │   ├── BudgetExhausted [budget_exhausted]          the task used its page or time budget
    │   ├── RateLimited [rate_limited]                  a per-task rate limit was reached (retry later)
    │   ├── JobCancelled [job_cancelled]                a running job saw a stop request
    │   └── InvalidGraphDataError [invalid_graph_data]  a node holds data Lyra cannot read (written by another tool)
    ├── UnavailableError [unavailable]                  something Lyra depends on cannot serve now
    │   ├── GraphUnavailableError [graph_unavailable]   Neo4j cannot be reached or refused the credentials
    │   ├── SourceUnavailable [source_not_available]    an outside source (web, academic API) cannot be used
    │   └── LLMError [llm_error]                        the language model failed or answered unusably
    ├── GraphQueryError [graph_query_error]             Neo4j rejected or failed one of Lyra's own queries
    └── Neo4jServerError [neo4j_server_error]           the managed local server could not be installed/started/stopped

Each front door maps this tree once: the CLI prints ``error (code): message`` and exits 2, MCP returns a tool error
whose text is :meth:`LyraError.to_dict` as JSON, REST answers that body with the status of ``lyra/api/app.py``'s
``STATUS_FOR_ERROR`` (a test raises every class through MCP and REST).
"""

from __future__ import annotations

from typing import Any


class LyraError(Exception):
    """Root of Lyra's errors. ``code`` is a stable machine-readable name."""

    code = "lyra_error"
    # what a background job did before this error ended it (the API requests it sent, say): kept as its result
    job_result: dict[str, Any] | None = None

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        return out


class ConfigError(LyraError):
    code = "config_error"


class InvalidInputError(LyraError):
    """A specific input field is wrong; ``field`` names it (dotted path, list indexes included)."""

    code = "invalid_input"

    def __init__(self, field: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(f"{field}: {message}", hint=hint)
        self.field = field
        self.reason = message

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["field"] = self.field
        return out


class QueryRefused(InvalidInputError):
    """Caller-supplied Cypher uses a clause, operator, procedure or function the read-only door does not allow
    (lyra/graph/query_guard.py), or Neo4j itself forbade it."""

    code = "query_refused"


class QuerySyntaxError(InvalidInputError):
    """Neo4j cannot parse or plan the caller's Cypher (syntax, unknown function, missing parameter...)."""

    code = "query_syntax"


class QueryFailed(InvalidInputError):
    """Neo4j failed the caller's Cypher while running it (division by zero, a type error, too much memory...)."""

    code = "query_failed"


class QueryTimeout(InvalidInputError):
    """The caller's Cypher ran past its time limit, or was terminated before it finished."""

    code = "query_timeout"


class QueryMemoryExceeded(InvalidInputError):
    """The caller's Cypher needed more heap than Neo4j lets one transaction use (``db.memory.transaction.max``)."""

    code = "query_memory"


class ResultTooLarge(InvalidInputError):
    """The result of the caller's Cypher passed the byte budget; nothing of it is returned."""

    code = "result_too_large"


class NotFoundError(LyraError):
    code = "not_found"


class ConflictError(LyraError):
    code = "conflict"


class BudgetExhausted(ConflictError):
    code = "budget_exhausted"


class RateLimited(ConflictError):
    """A per-task rate limit was reached (e.g. assistant judgments per minute); waiting and retrying succeeds."""

    code = "rate_limited"


class JobCancelled(ConflictError):
    """A running job saw a stop request (``stop_task(mode=immediate)``)."""

    code = "job_cancelled"


class InvalidGraphDataError(ConflictError):
    """A node holds data Lyra cannot read (e.g. written by hand in Neo4j Browser without a required property)."""

    code = "invalid_graph_data"


class UnavailableError(LyraError):
    code = "unavailable"


class GraphUnavailableError(UnavailableError):
    code = "graph_unavailable"


class SourceUnavailable(UnavailableError):
    code = "source_not_available"


class LLMError(UnavailableError):
    code = "llm_error"


class GraphQueryError(LyraError):
    code = "graph_query_error"


class Neo4jServerError(LyraError):
    code = "neo4j_server_error"
