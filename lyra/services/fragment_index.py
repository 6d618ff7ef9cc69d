"""Open the FAISS fragment index and keep it consistent with Neo4j (the source of truth)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from lyra.graph.store import GraphStore
from lyra.ml.vector_index import FragmentIndex

log = logging.getLogger(__name__)
PAGE = 5000


def stream_embeddings(store: GraphStore) -> Iterator[tuple[str, list[float]]]:
    after = ""
    while True:
        rows = store.run("evidence/fragment_embeddings_page", {"after": after, "limit": PAGE})
        for row in rows:
            yield row["id"], row["embedding"]
        if len(rows) < PAGE:
            return
        after = rows[-1]["id"]


def open_fragment_index(store: GraphStore, path: Path, dimension: int) -> FragmentIndex:
    """Load the index from disk; rebuild it from the embeddings stored on the Fragment nodes when it is
    missing, unreadable, or out of step with Neo4j (e.g. after a crash between a write and a save)."""
    index = FragmentIndex.load(path, dimension)
    in_graph = store.run("evidence/fragment_embedding_count")[0]["fragments"]
    if len(index) == in_graph:
        return index
    log.info("FAISS index has %d fragments, Neo4j %d: rebuilding from Neo4j", len(index), in_graph)
    index.rebuild(stream_embeddings(store))
    index.save()
    return index
