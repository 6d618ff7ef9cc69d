"""Exploring the graph: named read-only views, ad-hoc read-only Cypher, similarity search over fragments.

The front doors (CLI now; MCP and REST later) call these; nothing here knows about an adapter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from lyra.core.errors import GraphQueryError, InvalidInputError, NotFoundError
from lyra.core.ids import validate_task_id
from lyra.graph.store import GraphStore, to_plain
from lyra.ml.protocols import Embedder
from lyra.ml.vector_index import FragmentIndex

MAX_ROWS = 1000
_PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class ViewInfo(BaseModel):
    name: str
    description: str
    parameters: list[str]


class QueryResult(BaseModel):
    rows: list[dict[str, Any]]
    row_count: int
    truncated: bool


class SearchHit(BaseModel):
    fragment_id: str
    score: float
    snippet: str
    page_id: str | None
    url: str | None
    title: str | None


class ExploreService:
    def __init__(
        self,
        store: GraphStore,
        embedder: Callable[[], Embedder] | None = None,
        index: Callable[[], FragmentIndex] | None = None,
        query_timeout: float = 30.0,
    ) -> None:
        self.store = store
        self._embedder = embedder
        self._index = index
        self.query_timeout = query_timeout

    # ------------------------------------------------------------------- views
    def list_views(self) -> list[ViewInfo]:
        return [
            ViewInfo(
                name=name.removeprefix("views/"),
                description=self.store.catalog[name].description,
                parameters=sorted(self.store.catalog[name].parameters),
            )
            for name in self.store.catalog.names("views/")
        ]

    def query_view(self, name: str, params: Mapping[str, Any]) -> QueryResult:
        full = f"views/{name}"
        if full not in self.store.catalog:
            known = ", ".join(v.name for v in self.list_views())
            raise NotFoundError(f"no view named {name!r}", hint=f"views: {known}")
        query = self.store.catalog[full]
        unknown = sorted(set(params) - query.parameters)
        if unknown:
            raise InvalidInputError(f"params.{unknown[0]}", f"view {name!r} takes no such parameter")
        missing = sorted(query.parameters - set(params))
        if missing:
            raise InvalidInputError(f"params.{missing[0]}", "required")
        if "task_id" in params:
            validate_task_id(params["task_id"], "params.task_id")
        rows = [to_plain(r) for r in self.store.run(full, params)]
        return QueryResult(rows=rows[:MAX_ROWS], row_count=min(len(rows), MAX_ROWS), truncated=len(rows) > MAX_ROWS)

    # ------------------------------------------------------------- ad-hoc Cypher
    def query_graph(self, cypher: str, params: Mapping[str, Any] | None = None, row_limit: int = 100) -> QueryResult:
        """Read-only Cypher for exploration: refused unless EXPLAIN says read-only; runs in a read transaction
        with a timeout and a row limit."""
        if not isinstance(cypher, str) or not cypher.strip():
            raise InvalidInputError("cypher", "must be a non-empty Cypher statement")
        if len(cypher) > 20_000:
            raise InvalidInputError("cypher", "longer than 20,000 characters")
        if not 1 <= row_limit <= MAX_ROWS:
            raise InvalidInputError("row_limit", f"must be between 1 and {MAX_ROWS}")
        args = dict(params or {})
        for key in args:
            if not _PARAM_NAME.match(str(key)):
                raise InvalidInputError(f"params.{key}", "not a valid parameter name")
        if re.match(r"^\s*(EXPLAIN|PROFILE)\b", cypher, re.IGNORECASE):
            raise InvalidInputError("cypher", "give the statement without EXPLAIN/PROFILE")
        try:
            query_type = self.store.explain_text(cypher, args)
        except GraphQueryError as exc:
            raise InvalidInputError(
                "cypher", f"Neo4j cannot plan it: {exc.message}", hint="check the syntax and labels; $params for values"
            ) from None
        if query_type != "r":
            raise InvalidInputError(
                "cypher",
                f"only read-only queries are allowed (Neo4j classifies this one as {query_type!r})",
                hint="use MATCH ... RETURN; writes go through Lyra's own commands",
            )
        rows, truncated = self.store.run_adhoc_read(cypher, args, row_limit, self.query_timeout)
        return QueryResult(rows=rows, row_count=len(rows), truncated=truncated)

    # ------------------------------------------------------------ vector search
    def vector_search(self, text: str, task_id: str | None = None, k: int = 10) -> list[SearchHit]:
        """Fragments most similar to ``text`` (cosine), optionally only those a task's claims reach."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("query", "must be non-empty text")
        if not 1 <= k <= 100:
            raise InvalidInputError("k", "must be between 1 and 100")
        if self._embedder is None or self._index is None:
            raise GraphQueryError("similarity search needs the embedding model, which is not configured")
        allowed: set[str] | None = None
        if task_id is not None:
            validate_task_id(task_id)
            allowed = set(self.store.run("evidence/task_fragment_ids", {"task_id": task_id})[0]["ids"])
            if not allowed:
                return []
        vector = self._embedder().embed([text])
        hits = self._index().search(vector, k=k, allowed=allowed)[0]
        if not hits:
            return []
        details = {
            r["fragment_id"]: r for r in self.store.run("evidence/fragment_snippets", {"ids": [h[0] for h in hits]})
        }
        return [
            SearchHit(
                fragment_id=fid,
                score=score,
                snippet=details[fid]["snippet"],
                page_id=details[fid]["page_id"],
                url=details[fid]["url"],
                title=details[fid]["title"],
            )
            for fid, score in hits
            if fid in details
        ]
