"""One exception root for everything Lyra raises on purpose.

Tree::

    LyraError
    ├── ConfigError            settings or environment are unusable
    ├── InvalidInputError      a request field is wrong (carries ``field``)
    ├── NotFoundError          a named object (task, claim, edge...) does not exist
    ├── ConflictError          the request clashes with what is stored
    ├── GraphUnavailableError  Neo4j cannot be reached or refused the credentials
    ├── GraphQueryError        Neo4j rejected or failed a query
    └── Neo4jServerError       the managed local server could not be installed/started/stopped

Front doors (CLI, later MCP and REST) map this tree once to their own error shapes.
"""

from __future__ import annotations

from typing import Any


class LyraError(Exception):
    """Root of Lyra's errors. ``code`` is a stable machine-readable name."""

    code = "lyra_error"

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


class NotFoundError(LyraError):
    code = "not_found"


class ConflictError(LyraError):
    code = "conflict"


class GraphUnavailableError(LyraError):
    code = "graph_unavailable"


class GraphQueryError(LyraError):
    code = "graph_query_error"


class Neo4jServerError(LyraError):
    code = "neo4j_server_error"
