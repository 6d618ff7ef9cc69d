"""Exploring the graph: named read-only views, ad-hoc read-only Cypher, similarity search over fragments.

The front doors (CLI, MCP, REST) call these; nothing here knows about an adapter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from lyra.core.errors import GraphQueryError, InvalidInputError, NotFoundError, QueryRefused
from lyra.core.ids import validate_task_id
from lyra.graph.query_guard import GuardLimits, check_plan, check_statement
from lyra.graph.store import GraphStore, to_plain
from lyra.ml.protocols import Embedder
from lyra.ml.vector_index import FragmentIndex
from lyra.models.api import GraphNode, QueryResult, SearchHit, SourceText, ViewInfo
from lyra.sources.untrusted import scanner_version, screen_rows, source_text

MAX_ROWS = 1000
MAX_CYPHER_CHARS = 20_000
MAX_PARAM_DEPTH = 32
CLAIM_LIMIT = 50_000
SNIPPET_CHARS = 300
_PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_INT64 = (-(2**63), 2**63 - 1)


def check_text(value: str, field: str) -> None:
    """Refuse a string Neo4j could not receive: one that is not valid Unicode (a lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            field, f"not valid Unicode: a lone surrogate U+{ord(value[exc.start]):04X} at offset {exc.start}"
        ) from None


def check_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Validate ad-hoc query parameters before anything is sent: names, and at any depth only JSON values
    Neo4j can take (valid Unicode strings, 64-bit integers, at most MAX_PARAM_DEPTH levels of lists and maps)."""
    args = dict(params)
    pending: list[tuple[str, Any, int]] = []
    for key, value in args.items():
        if not isinstance(key, str) or not _PARAM_NAME.match(key):
            shown = str(key).encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate stays printable
            raise InvalidInputError(f"params.{shown}", "not a valid parameter name")
        pending.append((f"params.{key}", value, 1))
    while pending:
        field, value, depth = pending.pop()
        if depth > MAX_PARAM_DEPTH:
            raise InvalidInputError(field, f"nested deeper than {MAX_PARAM_DEPTH} levels")
        if isinstance(value, str):
            check_text(value, field)
        elif isinstance(value, bool) or value is None or isinstance(value, float):
            continue
        elif isinstance(value, int):
            if not _INT64[0] <= value <= _INT64[1]:
                raise InvalidInputError(field, "an integer outside Neo4j's 64-bit range")
        elif isinstance(value, list):
            pending.extend((f"{field}[{i}]", item, depth + 1) for i, item in enumerate(value))
        elif isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise InvalidInputError(field, "map keys must be strings")
                check_text(key, f"{field} (a key)")
                pending.append((f"{field}.{key}", item, depth + 1))
        else:
            raise InvalidInputError(field, f"a {type(value).__name__} is not a JSON value")
    return args


CAPTION_CHARS = 160
# node labels whose caption is a source's text (a fragment's passage, a page's title)
_SOURCE_CAPTIONS = frozenset({"Fragment", "Page"})


def _source_text_model(text: str | None, reveal: bool) -> SourceText | None:
    marked = source_text(text, reveal=reveal)
    return None if marked is None else SourceText.model_validate(marked)


def graph_node(node: dict[str, Any], reveal: bool = False) -> GraphNode:
    """A node of graph/task_subgraph: a fragment's or page's caption becomes a SourceText (shortened, scanned, and
    withheld when flagged unless ``reveal``); a page without a title is captioned by its URL."""
    node = dict(node)
    stamp = node.pop("scanned_with", None)
    if node.get("label") in _SOURCE_CAPTIONS and node.get("caption") is not None:
        clean = stamp is not None and stamp == scanner_version()
        node["caption"] = source_text(node["caption"], CAPTION_CHARS, reveal=reveal, known_clean=clean)
    elif node.get("label") == "Page":
        node["caption"] = node.get("url")
    return GraphNode.model_validate(node)


def screened(result: QueryResult, reveal: bool = False) -> QueryResult:
    """A query's rows with every string value the scanner flags withheld (null, its path in ``withheld``) unless
    ``reveal``; the result says whether the scan covered every string (see lyra.sources.untrusted.screen_rows)."""
    rows, flagged, findings, complete = screen_rows(result.rows, reveal=reveal)
    return result.model_copy(
        update={
            "rows": rows,
            "withheld": [] if reveal else flagged,
            "findings": findings,
            "scan_complete": complete,
        }
    )


class ExploreService:
    def __init__(
        self,
        store: GraphStore,
        embedder: Callable[[], Embedder] | None = None,
        index: Callable[[], FragmentIndex] | None = None,
        query_timeout: float = 30.0,
        query_max_bytes: int = 4_000_000,
        query_limits: GuardLimits | None = None,
    ) -> None:
        self.store = store
        self._embedder = embedder
        self._index = index
        self.query_timeout = query_timeout
        self.query_max_bytes = query_max_bytes
        self.query_limits = query_limits or GuardLimits()

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
        """Read-only Cypher for exploration, through the guard of lyra/graph/query_guard.py.

        Checked in this order, and nothing reaches Neo4j until the checks before it passed: the request's shape
        (text, row limit, parameters at any depth); the statement (procedures and functions on the allow-lists, no
        LOAD CSV/USE/SHOW/TERMINATE/IN TRANSACTIONS or administration command, no character or escape that could
        hide text, its size, nesting and amplifier counts within ``query_limits``); EXPLAIN's plan
        (read operators and allowed procedures only, and Neo4j classifying it 'r'). Then it runs in a READ
        transaction with a timeout, a row limit and a byte budget on the JSON of the rows; the answer comes within the
        timeout and a grace even if Neo4j does not stop the work (its transaction is then terminated).
        """
        if not isinstance(cypher, str) or not cypher.strip():
            raise InvalidInputError("cypher", "must be a non-empty Cypher statement")
        if len(cypher) > MAX_CYPHER_CHARS:
            raise InvalidInputError("cypher", f"longer than {MAX_CYPHER_CHARS:,} characters")
        check_text(cypher, "cypher")
        if not 1 <= row_limit <= MAX_ROWS:
            raise InvalidInputError("options.row_limit", f"must be between 1 and {MAX_ROWS}")
        args = check_params(params or {})
        check_statement(cypher, args, self.query_limits)
        query_type, plan = self.store.explain_adhoc(cypher, args, self.query_timeout)
        check_plan(plan)
        if query_type != "r":
            raise QueryRefused(
                "cypher",
                f"only read-only queries are allowed (Neo4j classifies this one as {query_type!r})",
                hint="use MATCH ... RETURN; writes go through Lyra's own commands",
            )
        rows, truncated = self.store.run_adhoc_read(cypher, args, row_limit, self.query_timeout, self.query_max_bytes)
        return QueryResult(rows=rows, row_count=len(rows), truncated=truncated)

    # ------------------------------------------------------------ vector search
    def vector_search(
        self, text: str, task_id: str | None = None, k: int = 10, kind: str = "fragments", reveal: bool = False
    ) -> list[SearchHit]:
        """Fragments (FAISS) and/or claims most similar to ``text`` (cosine), optionally within one task. Snippets
        and titles are marked as the sources' text; the scanner's flagged ones are withheld unless ``reveal``."""
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
            hits.extend(self._fragment_hits(vector, task_id, k, reveal))
        if kind in ("claims", "both"):
            hits.extend(self._claim_hits(vector, task_id, k, reveal))
        hits.sort(key=lambda h: -h.score)
        return hits[:k]

    def _fragment_hits(self, vector: np.ndarray, task_id: str | None, k: int, reveal: bool) -> list[SearchHit]:
        assert self._index is not None
        allowed: set[str] | None = None
        if task_id is not None:
            allowed = set(self.store.run("evidence/task_fragment_ids", {"task_id": task_id})[0]["ids"])
            if not allowed:
                return []
        index = self._index()
        found = index.search(vector, k=k, allowed=allowed)[0]
        if not found:
            return []
        rows = self.store.run("evidence/fragment_snippets", {"ids": [h[0] for h in found], "task_id": task_id})
        details = {r["fragment_id"]: r for r in rows}
        index.discard(fid for fid, _ in found if fid not in details)  # deleted since it was indexed (a clean-up)
        return [
            SearchHit(
                kind="fragment",
                id=fid,
                score=score,
                snippet=SourceText.model_validate(
                    source_text(
                        details[fid]["text"],
                        SNIPPET_CHARS,
                        reveal=reveal,
                        known_clean=details[fid]["scanned_with"] == scanner_version(),
                    )
                ),
                page_id=details[fid]["page_id"],
                url=details[fid]["url"],
                title=_source_text_model(details[fid]["title"], reveal),
            )
            for fid, score in found
            if fid in details
        ]

    def _claim_hits(self, vector: np.ndarray, task_id: str | None, k: int, reveal: bool) -> list[SearchHit]:
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
                # a claim is a person's text or drawn from a source by the local model: marked as data either way
                snippet=SourceText.model_validate(source_text(rows[i]["text"], SNIPPET_CHARS, reveal=reveal)),
                task_id=rows[i]["task_id"],
            )
            for i in best
        ]
