"""The stored feedback records and their similarity index.

Every feedback action is a :class:`~lyra.models.learning.FeedbackRecord` node (append-only). Its context (claim,
passage, labels, comment; :func:`context_text`) is embedded into a FAISS index under ``<state_dir>/faiss/feedback``
(:class:`FeedbackIndex`, rebuilt from the embeddings kept on the nodes when missing or out of step).
:class:`FeedbackRecords` reads the records back: by id, by component, and the ones most similar to a record.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lyra.core.errors import NotFoundError
from lyra.graph.store import GraphStore, to_plain
from lyra.ml.protocols import Embedder
from lyra.ml.vector_index import FragmentIndex
from lyra.models.learning import (
    FeedbackForComponentRequest,
    FeedbackRecord,
    FeedbackRecordList,
    FindSimilarRequest,
    GetFeedbackRequest,
    SimilarRecord,
    SimilarRecords,
)

log = logging.getLogger(__name__)

HISTORY_LIMIT = 5000  # records of a component the evaluator and the proposer read at most
PAGE = 2000


def context_text(record: dict[str, Any]) -> str:
    """What a record's embedding is made of: the claim, the passage, the labels, the comment."""
    parts = []
    if record.get("hypothesis"):
        parts.append(f"claim: {record['hypothesis']}")
    if record.get("premise"):
        parts.append(f"passage: {str(record['premise'])[:1500]}")
    if record.get("predicted_label") or record.get("correct_label"):
        parts.append(f"labels: {record.get('predicted_label')} -> {record.get('correct_label')}")
    if record.get("domain"):
        parts.append(f"domain: {record['domain']}")
    parts.append(f"{record['kind']}: {record.get('comment') or ''}")
    return "\n".join(parts)


class FeedbackIndex:
    """FAISS (exact inner product on L2-normalised vectors) over the records' context embeddings."""

    def __init__(self, store: GraphStore, path: Path, embedder: Callable[[], Embedder]) -> None:
        self.store = store
        self.path = path
        self._embedder = embedder
        self._index: FragmentIndex | None = None
        self._lock = threading.Lock()

    def embedder(self) -> Embedder:
        return self._embedder()

    def embed(self, text: str) -> list[float]:
        return [float(x) for x in self._embedder().embed([text])[0]]

    def _open(self) -> FragmentIndex:
        with self._lock:
            if self._index is not None:
                return self._index
            embedder = self._embedder()
            embedder.embed(["warm-up"])  # fixes the dimension
            index = FragmentIndex.load(self.path, embedder.dimension, kind="flat")
            in_graph = int(self.store.run("learning/feedback_record_count")[0]["records"])
            if len(index) != in_graph:
                log.info("feedback index has %d records, Neo4j %d: rebuilding from Neo4j", len(index), in_graph)
                index.rebuild(self._stream())
                index.save()
            self._index = index
            return index

    def _stream(self) -> Any:
        after = ""
        while True:
            rows = self.store.run("learning/feedback_embeddings_page", {"after": after, "limit": PAGE})
            for row in rows:
                yield row["id"], row["embedding"]
            if len(rows) < PAGE:
                return
            after = rows[-1]["id"]

    def add(self, record_id: str, vector: Sequence[float]) -> None:
        index = self._open()
        if index.add([record_id], np.asarray([vector], dtype=np.float32)):
            index.save()

    def search(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        return self._open().search(np.asarray([vector], dtype=np.float32), k=k)[0]


class FeedbackRecords:
    """Reads the feedback records (as plain dicts for the other stages, as models for the doors)."""

    def __init__(self, store: GraphStore, index: FeedbackIndex) -> None:
        self.store = store
        self.index = index

    def of_component(self, component: str, limit: int = HISTORY_LIMIT) -> list[dict[str, Any]]:
        rows = self.store.run("learning/feedback_for_component", {"component": component, "limit": limit})
        return [to_plain(r["record"]) for r in rows]

    def by_ids(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """The records of ``ids`` that exist, in the order of ``ids``."""
        rows = [to_plain(r["record"]) for r in self.store.run("learning/feedback_records", {"ids": list(ids)})]
        order = {rid: i for i, rid in enumerate(ids)}
        return sorted(rows, key=lambda r: order.get(r["id"], 0))

    @staticmethod
    def model(record: dict[str, Any]) -> FeedbackRecord:
        fields = set(FeedbackRecord.model_fields)
        return FeedbackRecord.model_validate({k: v for k, v in record.items() if k in fields and v is not None})

    def get(self, request: GetFeedbackRequest) -> FeedbackRecord:
        rows = self.by_ids([request.id])
        if not rows:
            raise NotFoundError(f"no feedback record {request.id!r}", hint="get_feedback_for_component lists them")
        return self.model(rows[0])

    def for_component(self, request: FeedbackForComponentRequest) -> FeedbackRecordList:
        return FeedbackRecordList(records=[self.model(r) for r in self.of_component(request.component, request.limit)])

    def find_similar(self, request: FindSimilarRequest) -> SimilarRecords:
        """Records whose context is at least ``threshold`` similar (cosine) to the record's, most similar first."""
        rows = self.by_ids([request.id])
        if not rows:
            raise NotFoundError(f"no feedback record {request.id!r}")
        vector = self.index.embed(context_text(rows[0]))
        hits = [(rid, s) for rid, s in self.index.search(vector, request.limit + 1) if rid != request.id]
        hits = [(rid, s) for rid, s in hits if s >= request.threshold][: request.limit]
        records = {r["id"]: r for r in self.by_ids([rid for rid, _ in hits])}
        return SimilarRecords(
            id=request.id,
            threshold=request.threshold,
            similar=[
                SimilarRecord(record=self.model(records[rid]), similarity=round(s, 4))
                for rid, s in hits
                if rid in records
            ],
        )
