"""The FAISS fragment index as a per-process cache of what Neo4j (the source of truth) holds.

Every fragment keeps its embedding in Neo4j (``Fragment.embedding``), and every new fragment gets a sequence number
(``Fragment.seq``) handed out in commit order (cypher/fragment_index/sequence_fragments.cypher). A process's index
remembers the number up to which it holds everything (its *watermark*) and, before each search or near-duplicate
check, asks the graph where the sequence stands: when nothing changed that is one constant-time read; otherwise it
reads the new fragment ids and fetches the embeddings of those it does not hold. So several ``lyra serve`` workers
over one Neo4j, on one host or many, find the same near-duplicates and the same similar fragments, and a worker
that joins late (an empty or old index file) catches up from the graph without re-embedding anything.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from lyra.core.errors import LyraError
from lyra.graph.store import GraphStore
from lyra.ml.vector_index import FragmentIndex

log = logging.getLogger(__name__)
PAGE = 5000  # fragments per read while rebuilding or catching up
SEQUENCE_BATCH = 10_000  # fragments numbered per write
MAX_ROUNDS = 1000  # bounds every loop below (10 million fragments per catch-up)


def stream_embeddings(store: GraphStore) -> Iterator[tuple[str, list[float]]]:
    after = ""
    while True:
        rows = store.run("evidence/fragment_embeddings_page", {"after": after, "limit": PAGE})
        for row in rows:
            yield row["id"], row["embedding"]
        if len(rows) < PAGE:
            return
        after = rows[-1]["id"]


class GraphIndexSource:
    """Catches a :class:`FragmentIndex` up with the fragments in Neo4j (the index's ``IndexSource``).

    ``min_interval`` seconds at least between two looks at the graph (0: before every search); within it, a
    fragment another process committed may not be seen yet.
    """

    def __init__(self, store: GraphStore, min_interval: float = 0.5) -> None:
        self.store = store
        self.min_interval = min_interval
        self._lock = threading.Lock()
        self._checked = -float("inf")  # time.monotonic() of the last look
        self.catch_ups = 0  # looks that found something new (for tests and logs)

    def sequence_pending(self) -> tuple[int, str | None]:
        """Number the fragments still waiting for a sequence number; returns where the sequence stands then:
        (the last number handed out, the counter's epoch)."""
        state = self.store.run("fragment_index/sync_state")[0]
        for _ in range(MAX_ROUNDS):
            if not state["pending"]:
                break
            rows = self.store.run("fragment_index/sequence_fragments", {"limit": SEQUENCE_BATCH})
            state = self.store.run("fragment_index/sync_state")[0]
            if not rows:
                break
        return int(state["top"]), state["epoch"]

    def catch_up(self, index: FragmentIndex, *, force: bool = False) -> None:
        if not force and time.monotonic() - self._checked < self.min_interval:
            return
        with self._lock:
            if not force and time.monotonic() - self._checked < self.min_interval:
                return  # another thread looked while this one waited
            try:
                self._catch_up(index)
            except LyraError as exc:  # searching what the index holds beats failing the search
                log.warning("could not catch the FAISS index up with Neo4j: %s", exc.message)
                return
            self._checked = time.monotonic()

    def rebuild(self, index: FragmentIndex) -> None:
        """Reload the index from every embedding in Neo4j; the watermark is where the sequence stood before."""
        top, epoch = self.sequence_pending()  # read first: what is numbered during the rebuild is caught up by id
        index.rebuild(stream_embeddings(self.store))
        index.watermark, index.epoch = top, epoch

    def _catch_up(self, index: FragmentIndex) -> None:
        top, epoch = self.sequence_pending()
        if epoch != index.epoch or top < index.watermark:  # a new counter: the database was emptied or replaced
            log.info("FAISS index counts in another run of Neo4j's fragment sequence: rebuilding from Neo4j")
            self.rebuild(index)
            self.catch_ups += 1
            return
        if top == index.watermark:
            return
        after, added = index.watermark, 0
        for _ in range(MAX_ROUNDS):
            rows = self.store.run("fragment_index/fragments_since", {"after": after, "limit": PAGE})
            missing = [r["id"] for r in rows if r["id"] not in index]  # those without an embedding: none comes back
            added += self._add(index, missing)
            if rows:
                after = max(after, int(rows[-1]["seq"]))
            if len(rows) < PAGE:
                break
        self.catch_ups += 1
        log.info("FAISS index caught up with Neo4j: %d fragment(s) added, watermark %d", added, after)
        index.watermark = after

    def _add(self, index: FragmentIndex, fragment_ids: Sequence[str]) -> int:
        added = 0
        for start in range(0, len(fragment_ids), PAGE):
            rows = self.store.run("fragment_index/embeddings_by_ids", {"ids": list(fragment_ids[start : start + PAGE])})
            if rows:
                vectors = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
                added += index.add([r["id"] for r in rows], vectors)
        return added

    def existing(self, fragment_ids: Sequence[str]) -> set[str]:
        return {r["id"] for r in self.store.run("fragment_index/existing_fragments", {"ids": list(fragment_ids)})}


def open_fragment_index(store: GraphStore, path: Path, dimension: int, sync_seconds: float = 0.5) -> FragmentIndex:
    """Load the index from disk, attach it to the graph and catch it up from its watermark (what other processes
    wrote meanwhile). It is rebuilt from the embeddings stored on the Fragment nodes when it is missing or unreadable,
    counts in another run of the sequence, or still holds other fragments than Neo4j after catching up (deleted
    ones, or fragments written by a path that numbers none)."""
    index = FragmentIndex.load(path, dimension)
    source = GraphIndexSource(store, sync_seconds)
    index.attach(source)
    source.catch_up(index, force=True)
    in_graph = store.run("evidence/fragment_embedding_count")[0]["fragments"]
    if len(index) != in_graph:
        log.info("FAISS index has %d fragments, Neo4j %d: rebuilding from Neo4j", len(index), in_graph)
        source.rebuild(index)
    index.save()
    return index
