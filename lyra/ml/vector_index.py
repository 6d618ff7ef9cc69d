"""FAISS index of fragment embeddings (cosine similarity on L2-normalised vectors).

* near-duplicate detection on ingest (beyond exact ``text_hash`` dedup) and similarity search;
* persisted to disk with its id map (written to a temporary file, then renamed: a crash never leaves a
  half-written index behind);
* rebuildable from Neo4j, where every fragment keeps its embedding (``Fragment.embedding``);
* guarded by a lock, so threads can share one index.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lyra.ml.protocols import FloatArray

log = logging.getLogger(__name__)


class FragmentIndex:
    def __init__(self, dimension: int, path: Path | None = None, kind: str = "hnsw", hnsw_m: int = 32) -> None:
        self.dimension = dimension
        self.path = path
        self.kind = kind
        self._hnsw_m = hnsw_m
        self._lock = threading.RLock()
        self._ids: list[str] = []  # position -> fragment id
        self._positions: dict[str, int] = {}
        self._index: Any = self._new_index()

    def _new_index(self) -> Any:
        import faiss

        if self.kind == "flat":
            return faiss.IndexFlatIP(self.dimension)
        index = faiss.IndexHNSWFlat(self.dimension, self._hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 80
        index.hnsw.efSearch = 64
        return index

    # ------------------------------------------------------------------ content
    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, fragment_id: object) -> bool:
        return fragment_id in self._positions

    def ids(self) -> set[str]:
        with self._lock:
            return set(self._ids)

    def add(self, fragment_ids: Sequence[str], vectors: FloatArray) -> int:
        """Add vectors for fragments not yet indexed; returns how many were added."""
        with self._lock:
            keep: list[int] = []
            seen: set[str] = set()
            for i, fid in enumerate(fragment_ids):
                if fid not in self._positions and fid not in seen:
                    seen.add(fid)
                    keep.append(i)
            if not keep:
                return 0
            batch = np.ascontiguousarray(vectors[keep], dtype=np.float32)
            self._index.add(batch)
            for i in keep:
                self._positions[fragment_ids[i]] = len(self._ids)
                self._ids.append(fragment_ids[i])
            return len(keep)

    def search(
        self, vectors: FloatArray, k: int = 10, allowed: set[str] | None = None
    ) -> list[list[tuple[str, float]]]:
        """For each query vector, up to ``k`` (fragment id, cosine) pairs, best first.

        ``allowed`` restricts results to those fragments (e.g. one task's), searching deeper as needed.
        """
        with self._lock:
            if not self._ids or len(vectors) == 0:
                return [[] for _ in range(len(vectors))]
            depth = k if allowed is None else min(len(self._ids), max(k * 8, 64))
            scores, positions = self._index.search(np.ascontiguousarray(vectors, dtype=np.float32), depth)
            out: list[list[tuple[str, float]]] = []
            for row_scores, row_positions in zip(scores, positions, strict=True):
                hits: list[tuple[str, float]] = []
                for score, position in zip(row_scores, row_positions, strict=True):
                    if position < 0:
                        continue
                    fid = self._ids[position]
                    if allowed is not None and fid not in allowed:
                        continue
                    hits.append((fid, float(score)))
                    if len(hits) == k:
                        break
                out.append(hits)
            return out

    def near_duplicates(self, vectors: FloatArray, threshold: float) -> list[tuple[str, float] | None]:
        """The closest indexed fragment per vector when its cosine is at least ``threshold``."""
        return [hits[0] if hits and hits[0][1] >= threshold else None for hits in self.search(vectors, k=1)]

    # -------------------------------------------------------------- persistence
    def save(self) -> None:
        if self.path is None:
            return
        import faiss

        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp_index = self.path.with_suffix(f".faiss.tmp{os.getpid()}")
            tmp_ids = self.path.with_suffix(f".ids.tmp{os.getpid()}")
            faiss.write_index(self._index, str(tmp_index))
            tmp_ids.write_text(
                json.dumps({"dimension": self.dimension, "kind": self.kind, "ids": self._ids}), encoding="utf-8"
            )
            tmp_ids.replace(self.path.with_suffix(".ids.json"))
            tmp_index.replace(self.path.with_suffix(".faiss"))

    @classmethod
    def load(cls, path: Path, dimension: int, kind: str = "hnsw") -> FragmentIndex:
        """Load a saved index, or start an empty one when none (or an unusable one) is on disk."""
        import faiss

        index = cls(dimension, path, kind)
        ids_file, index_file = path.with_suffix(".ids.json"), path.with_suffix(".faiss")
        if not ids_file.exists() or not index_file.exists():
            return index
        try:
            meta = json.loads(ids_file.read_text(encoding="utf-8"))
            loaded = faiss.read_index(str(index_file))
        except (OSError, ValueError, RuntimeError) as exc:
            log.warning("ignoring an unreadable FAISS index at %s (%s); it will be rebuilt", path, exc)
            return index
        if meta.get("dimension") != dimension or loaded.ntotal != len(meta.get("ids", [])):
            log.warning("FAISS index at %s does not match its id map; it will be rebuilt", path)
            return index
        index._index = loaded
        index._ids = list(meta["ids"])
        index._positions = {fid: i for i, fid in enumerate(index._ids)}
        return index

    def rebuild(self, rows: Iterable[tuple[str, Sequence[float]]]) -> int:
        """Replace the content with (fragment id, embedding) rows, e.g. streamed from Neo4j."""
        with self._lock:
            self._index = self._new_index()
            self._ids, self._positions = [], {}
            batch_ids: list[str] = []
            batch_vectors: list[Sequence[float]] = []
            for fid, vector in rows:
                batch_ids.append(fid)
                batch_vectors.append(vector)
                if len(batch_ids) >= 10_000:
                    self.add(batch_ids, np.asarray(batch_vectors, dtype=np.float32))
                    batch_ids, batch_vectors = [], []
            if batch_ids:
                self.add(batch_ids, np.asarray(batch_vectors, dtype=np.float32))
            return len(self._ids)

    def memory_bytes(self) -> int:
        """Approximate memory held by the index (vectors + graph links for HNSW) and the id map."""
        vectors = len(self._ids) * self.dimension * 4
        links = len(self._ids) * self._hnsw_m * 2 * 4 if self.kind == "hnsw" else 0
        id_map = sum(len(fid) + 57 for fid in self._ids) + len(self._ids) * 8 * 2
        return vectors + links + id_map
