"""FAISS index of fragment embeddings (cosine similarity on L2-normalised vectors).

* near-duplicate detection on ingest (beyond exact ``text_hash`` dedup) and similarity search;
* persisted to disk as one file: the id map, the watermark and the FAISS bytes together (written to a temporary
  file, then renamed: a crash never leaves a half-written index behind, and processes that share a state folder
  never pair one's id map with another's vectors);
* rebuildable from Neo4j, where every fragment keeps its embedding (``Fragment.embedding``);
* a per-process cache of what the graph holds: an attached :class:`IndexSource` (the graph) catches the index up
  before each search (what other processes wrote since ``watermark``) and confirms near-duplicate hits still
  exist, so several workers over one Neo4j find the same near-duplicates;
* guarded by a lock, so threads can share one index.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from lyra.ml.protocols import FloatArray

log = logging.getLogger(__name__)
SUFFIX = ".index"  # the one file an index is saved to: <path>.index
NEAR_DUPLICATE_TRIES = 3  # hits on fragments deleted meanwhile are dropped and the search repeated, this many times


class IndexSource(Protocol):
    """Where the fragments an index caches live (the graph): catches an index up and says which ids still exist."""

    def catch_up(self, index: FragmentIndex) -> None:
        """Add what the source gained since ``index.watermark`` and move the watermark on (cheap when nothing did)."""
        ...

    def existing(self, fragment_ids: Sequence[str]) -> set[str]:
        """Those of ``fragment_ids`` the source still holds."""
        ...


class FragmentIndex:
    def __init__(self, dimension: int, path: Path | None = None, kind: str = "hnsw", hnsw_m: int = 32) -> None:
        self.dimension = dimension
        self.path = path
        self.kind = kind
        self._hnsw_m = hnsw_m
        self._lock = threading.RLock()
        self._ids: list[str] = []  # position -> fragment id
        self._positions: dict[str, int] = {}
        self._removed: set[str] = set()  # ids the source no longer holds (HNSW cannot delete: they are skipped)
        self._index: Any = self._new_index()
        self._source: IndexSource | None = None
        self.watermark = 0  # the source's sequence number up to which this index holds everything
        self.epoch: str | None = None  # which run of the source's sequence the watermark counts in

    def attach(self, source: IndexSource) -> None:
        """Catch up from ``source`` before every search, and check near-duplicate hits against it."""
        self._source = source

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
        """Fragments held (those known to be removed from the source not counted)."""
        return len(self._ids) - len(self._removed)

    def __contains__(self, fragment_id: object) -> bool:
        return fragment_id in self._positions

    def ids(self) -> set[str]:
        with self._lock:
            return set(self._ids) - self._removed

    def discard(self, fragment_ids: Iterable[str]) -> int:
        """Stop returning these fragments (deleted from the source); returns how many were held."""
        with self._lock:
            gone = {fid for fid in fragment_ids if fid in self._positions} - self._removed
            self._removed |= gone
            return len(gone)

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

        ``allowed`` restricts results to those fragments (e.g. one task's), searching deeper as needed. With a
        source attached, the index first catches up with it.
        """
        if self._source is not None:
            self._source.catch_up(self)
        with self._lock:
            if not self._ids or len(vectors) == 0:
                return [[] for _ in range(len(vectors))]
            depth = k + len(self._removed) if allowed is None else max(k * 8, 64) + len(self._removed)
            depth = min(len(self._ids), depth)
            scores, positions = self._index.search(np.ascontiguousarray(vectors, dtype=np.float32), depth)
            out: list[list[tuple[str, float]]] = []
            for row_scores, row_positions in zip(scores, positions, strict=True):
                hits: list[tuple[str, float]] = []
                for score, position in zip(row_scores, row_positions, strict=True):
                    if position < 0:
                        continue
                    fid = self._ids[position]
                    if fid in self._removed or (allowed is not None and fid not in allowed):
                        continue
                    hits.append((fid, float(score)))
                    if len(hits) == k:
                        break
                out.append(hits)
            return out

    def near_duplicates(self, vectors: FloatArray, threshold: float) -> list[tuple[str, float] | None]:
        """The closest indexed fragment per vector when its cosine is at least ``threshold``. With a source
        attached, a hit the source no longer holds (deleted by a clean-up) is dropped and the search repeated."""
        for _ in range(NEAR_DUPLICATE_TRIES):
            found = [hits[0] if hits and hits[0][1] >= threshold else None for hits in self.search(vectors, k=1)]
            hit_ids = {hit[0] for hit in found if hit is not None}
            if self._source is None or not hit_ids:
                return found
            gone = hit_ids - self._source.existing(sorted(hit_ids))
            if not gone:
                return found
            self.discard(gone)
        return [None] * len(vectors)  # still hitting deleted fragments: treat the passages as new

    # -------------------------------------------------------------- persistence
    def save(self) -> None:
        """Write ``<path>.index``: one JSON line (dimension, kind, watermark, epoch, ids), then the FAISS bytes."""
        if self.path is None:
            return
        import faiss

        with self._lock:
            target = self.path.with_suffix(SUFFIX)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f"{SUFFIX}.tmp{os.getpid()}.{threading.get_ident()}")
            meta = {
                "dimension": self.dimension,
                "kind": self.kind,
                "watermark": self.watermark,
                "epoch": self.epoch,
                "ids": self._ids,
            }
            payload = faiss.serialize_index(self._index)
            with tmp.open("wb") as out:
                out.write(json.dumps(meta).encode("utf-8") + b"\n")
                out.write(payload.tobytes())
            tmp.replace(target)

    @classmethod
    def load(cls, path: Path, dimension: int, kind: str = "hnsw") -> FragmentIndex:
        """Load a saved index, or start an empty one when none (or an unusable one) is on disk."""
        import faiss

        index = cls(dimension, path, kind)
        source = path.with_suffix(SUFFIX)
        if not source.exists():
            return index
        try:
            with source.open("rb") as data:
                meta = json.loads(data.readline())
                loaded = faiss.deserialize_index(np.frombuffer(data.read(), dtype=np.uint8))
        except (OSError, ValueError, RuntimeError) as exc:
            log.warning("ignoring an unreadable FAISS index at %s (%s); it will be rebuilt", source, exc)
            return index
        ids = meta.get("ids") if isinstance(meta, dict) else None
        if (
            not isinstance(ids, list)
            or meta.get("dimension") != dimension
            or meta.get("kind", kind) != kind
            or loaded.ntotal != len(ids)
        ):
            log.warning("FAISS index at %s does not match its id map; it will be rebuilt", source)
            return index
        index._index = loaded
        index._ids = [str(fid) for fid in ids]
        index._positions = {fid: i for i, fid in enumerate(index._ids)}
        watermark = meta.get("watermark", 0)
        epoch = meta.get("epoch")
        index.watermark = watermark if isinstance(watermark, int) else 0
        index.epoch = epoch if isinstance(epoch, str) else None
        return index

    def rebuild(self, rows: Iterable[tuple[str, Sequence[float]]]) -> int:
        """Replace the content with (fragment id, embedding) rows, e.g. streamed from Neo4j."""
        with self._lock:
            self._index = self._new_index()
            self._ids, self._positions, self._removed = [], {}, set()
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
