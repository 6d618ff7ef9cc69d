"""Exploring the graph: named read-only views, ad-hoc read-only Cypher, similarity search over fragments.

The front doors (CLI, MCP, REST) call these; nothing here knows about an adapter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from lyra.core.errors import GraphQueryError, InvalidInputError, NotFoundError
from lyra.core.ids import validate_task_id
from lyra.graph.store import GraphStore, to_plain
from lyra.ml.protocols import Embedder
from lyra.ml.vector_index import FragmentIndex
from lyra.models.api import QueryResult, SearchHit, ViewInfo

MAX_ROWS = 1000
CLAIM_LIMIT = 50_000
_PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


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
    def vector_search(
        self, text: str, task_id: str | None = None, k: int = 10, kind: str = "fragments"
    ) -> list[SearchHit]:
        """Fragments (FAISS) and/or claims most similar to ``text`` (cosine), optionally within one task."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("query", "must be non-empty text")
        if not 1 <= k <= 100:
            raise InvalidInputError("k", "must be between 1 and 100")
        if kind not in ("fragments", "claims", "both"):
            raise InvalidInputError("kind", "must be fragments, claims or both")
        if self._embedder is None or self._index is None:
            raise GraphQueryError("similarity search needs the embedding model, which is not configured")
        if task_id is not None:
            validate_task_id(task_id)
        vector = self._embedder().embed([text])
        hits: list[SearchHit] = []
        if kind in ("fragments", "both"):
            hits.extend(self._fragment_hits(vector, task_id, k))
        if kind in ("claims", "both"):
            hits.extend(self._claim_hits(vector, task_id, k))
        hits.sort(key=lambda h: -h.score)
        return hits[:k]

    def _fragment_hits(self, vector: np.ndarray, task_id: str | None, k: int) -> list[SearchHit]:
        assert self._index is not None
        allowed: set[str] | None = None
        if task_id is not None:
            allowed = set(self.store.run("evidence/task_fragment_ids", {"task_id": task_id})[0]["ids"])
            if not allowed:
                return []
        found = self._index().search(vector, k=k, allowed=allowed)[0]
        if not found:
            return []
        details = {
            r["fragment_id"]: r for r in self.store.run("evidence/fragment_snippets", {"ids": [h[0] for h in found]})
        }
        return [
            SearchHit(
                kind="fragment",
                id=fid,
                score=score,
                snippet=details[fid]["snippet"],
                page_id=details[fid]["page_id"],
                url=details[fid]["url"],
                title=details[fid]["title"],
            )
            for fid, score in found
            if fid in details
        ]

    def _claim_hits(self, vector: np.ndarray, task_id: str | None, k: int) -> list[SearchHit]:
        """Claims are few per task: their embeddings are computed once, kept on the Claim node, and compared
        exactly (no index to keep in step)."""
        assert self._embedder is not None
        missing = self.store.run("evidence/claims_without_embedding", {"task_id": task_id, "limit": CLAIM_LIMIT})
        if missing:
            vectors = self._embedder().embed([m["text"] for m in missing])
            self.store.run(
                "evidence/set_claim_embeddings",
                {
                    "rows": [
                        {"id": m["id"], "embedding": [float(x) for x in v]}
                        for m, v in zip(missing, vectors, strict=True)
                    ]
                },
            )
        rows = self.store.run("evidence/claim_embeddings", {"task_id": task_id, "limit": CLAIM_LIMIT})
        if not rows:
            return []
        matrix = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        scores = matrix @ np.asarray(vector, dtype=np.float32)[0]
        best = np.argsort(-scores)[:k]
        return [
            SearchHit(
                kind="claim",
                id=rows[i]["id"],
                score=float(scores[i]),
                snippet=rows[i]["text"][:300],
                task_id=rows[i]["task_id"],
            )
            for i in best
        ]
