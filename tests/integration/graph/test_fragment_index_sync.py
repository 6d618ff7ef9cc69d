"""The FAISS index is a per-process cache of what Neo4j holds (real Neo4j; each "process" here is a GraphStore with
its own driver and its own index, as separate `lyra serve` workers have): what one writes, the other finds before
its next search; a late joiner catches up from its saved watermark without rebuilding; a deleted fragment stops
being a near-duplicate; sequence numbers handed out concurrently follow commit order."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lyra.bootstrap import Services
from lyra.graph.evidence import EvidenceRepository
from lyra.graph.store import GraphStore, open_driver
from lyra.ml.vector_index import FragmentIndex
from lyra.services.fragment_index import GraphIndexSource, open_fragment_index

pytestmark = pytest.mark.neo4j
DIM = 16


@pytest.fixture
def stores(graph: Services) -> Iterator[Callable[[], GraphStore]]:
    opened: list[GraphStore] = []
    settings = graph.settings
    password = settings.neo4j.neo4j_password.get_secret_value() if settings.neo4j.neo4j_password else ""

    def build() -> GraphStore:
        store = GraphStore(
            open_driver(str(settings.neo4j.neo4j_uri), settings.neo4j.neo4j_username, password),
            graph.store.catalog,
            settings,
        )
        opened.append(store)
        return store

    yield build
    for store in opened:
        store.close()


def vectors(seed: int, n: int) -> np.ndarray:
    arr = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return arr / np.linalg.norm(arr, axis=1, keepdims=True)


def write(store: GraphStore, prefix: str, vecs: np.ndarray) -> list[str]:
    """Fragments with these embeddings on new pages, written the way ingest writes them."""
    evidence = EvidenceRepository(store)
    pages = evidence.upsert_pages([{"url": f"https://sync.example/{prefix}/{i}"} for i in range(len(vecs))]).ids
    rows = [
        {"page_id": page, "text": f"{prefix} passage {i}", "embedding": [float(x) for x in vec]}
        for i, (page, vec) in enumerate(zip(pages, vecs, strict=True))
    ]
    return evidence.upsert_fragments(rows).ids


class Recorder:
    """Records the names of the statements a real GraphStore runs (no fake: every call goes to Neo4j)."""

    def __init__(self, store: GraphStore) -> None:
        self.names: list[str] = []
        original = store.run

        def run(name: str, params: Any = None) -> list[dict[str, Any]]:
            self.names.append(name)
            return original(name, params)

        store.run = run  # type: ignore[method-assign]


def test_what_one_process_writes_the_other_finds_before_its_next_search(
    graph: Services, stores: Callable[[], GraphStore], tmp_path: Path
) -> None:
    a, b = stores(), stores()
    first = vectors(1, 20)
    ids = write(a, "a1", first)
    index_b = open_fragment_index(b, tmp_path / "b" / "fragments", DIM, sync_seconds=0)
    assert index_b.ids() == set(ids)  # built from the embeddings in Neo4j: nothing re-embedded

    later = vectors(2, 5)
    more = write(a, "a2", later)  # written by the other process after b opened its index
    hits = index_b.search(later[:1], k=1)[0]
    assert hits[0][0] == more[0] and hits[0][1] > 0.999
    near = index_b.near_duplicates((later[3] + 0.01 * vectors(3, 1)[0])[None, :], 0.95)[0]
    assert near is not None and near[0] == more[3]

    recorder = Recorder(b)
    index_b.search(first[:1], k=1)  # nothing changed: one constant-time look at the graph
    assert recorder.names == ["fragment_index/sync_state"]


def test_a_late_joiner_catches_up_from_its_saved_watermark_without_rebuilding(
    graph: Services, stores: Callable[[], GraphStore], tmp_path: Path
) -> None:
    a, b = stores(), stores()
    write(a, "old", vectors(4, 30))
    path = tmp_path / "late" / "fragments"
    open_fragment_index(b, path, DIM, sync_seconds=0)  # saved with its watermark
    new_ids = write(a, "new", vectors(5, 4))  # while the late worker is down

    recorder = Recorder(b)
    index = open_fragment_index(b, path, DIM, sync_seconds=0)
    assert set(new_ids) <= index.ids() and len(index) == 34
    assert "evidence/fragment_embeddings_page" not in recorder.names  # no rebuild: caught up from the watermark
    fetched = [n for n in recorder.names if n == "fragment_index/embeddings_by_ids"]
    assert len(fetched) == 1  # only the 4 new embeddings were read


def test_a_deleted_fragment_stops_being_a_near_duplicate(
    graph: Services, stores: Callable[[], GraphStore], tmp_path: Path
) -> None:
    a = stores()
    vecs = vectors(6, 3)
    ids = write(a, "del", vecs)
    index = open_fragment_index(a, tmp_path / "d" / "fragments", DIM, sync_seconds=0)
    assert index.near_duplicates(vecs[:1], 0.95)[0] == (ids[0], pytest.approx(1.0, abs=1e-4))
    graph.store.driver.execute_query(  # test-only shortcut: a clean-up deleted the fragment
        "MATCH (f:Fragment {id: $id}) DETACH DELETE f", id=ids[0], database_=graph.store.database
    )
    assert index.near_duplicates(vecs[:1], 0.95) == [None]
    assert ids[0] not in index.ids()


def test_an_emptied_database_is_noticed_and_the_index_rebuilt(
    graph: Services, stores: Callable[[], GraphStore], tmp_path: Path
) -> None:
    a = stores()
    write(a, "before", vectors(7, 5))
    index = open_fragment_index(a, tmp_path / "e" / "fragments", DIM, sync_seconds=0)
    epoch = index.epoch
    graph.store.run("admin/wipe_all_data", {"batch_size": 10_000})
    after = write(a, "after", vectors(8, 2))
    assert index.search(vectors(8, 1), k=5)[0][0][0] == after[0]
    assert index.ids() == set(after) and index.epoch not in (None, epoch)


def test_sequence_numbers_handed_out_concurrently_let_every_reader_catch_up_completely(
    graph: Services, stores: Callable[[], GraphStore]
) -> None:
    """Writers add fragments while readers catch up over and over (each numbering what it finds): every fragment
    ends with one number, no number is given twice, and every reader's index ends with every fragment."""
    writers, readers = [stores() for _ in range(3)], [stores() for _ in range(3)]
    indexes = [FragmentIndex(DIM, None, kind="flat") for _ in readers]
    sources = [GraphIndexSource(store, 0) for store in readers]
    written: list[str] = []
    lock = threading.Lock()
    done = threading.Event()

    def writer(i: int) -> None:
        for round_ in range(6):
            ids = write(writers[i], f"w{i}r{round_}", vectors(100 * i + round_, 5))
            with lock:
                written.extend(ids)

    def reader(i: int) -> None:
        while not done.is_set():
            sources[i].catch_up(indexes[i], force=True)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(len(readers))]
    for thread in threads:
        thread.start()
    writing = [threading.Thread(target=writer, args=(i,)) for i in range(len(writers))]
    for thread in writing:
        thread.start()
    for thread in writing:
        thread.join(120)
    done.set()
    for thread in threads:
        thread.join(60)
    for source, index in zip(sources, indexes, strict=True):
        source.catch_up(index, force=True)
        assert index.ids() == set(written)
    records, _, _ = graph.store.driver.execute_query(
        "MATCH (f:Fragment) RETURN f.seq AS seq, f:Unsequenced AS pending", database_=graph.store.database
    )
    seqs = [r["seq"] for r in records]
    assert len(records) == len(written) == 90 and not any(r["pending"] for r in records)
    assert None not in seqs and len(set(seqs)) == len(seqs)
