"""Workers on several hosts write the same evidence at the same moment (real Neo4j; threads with their own driver,
released together at a barrier each round): the database keeps one page per URL, one fragment per text, one
EXTRACTED_FROM / CITES / IN_DOMAIN per pair and one stance edge per (fragment, claim), whatever order the rows
come in. The guarantees come from Neo4j (unique constraints with locking seeks and MERGE, the claim's lock in
create_stance_edges), not from any process's memory."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from lyra.bootstrap import Services
from lyra.core.errors import LyraError
from lyra.graph.evidence import EvidenceRepository
from lyra.graph.store import GraphStore, open_driver

pytestmark = pytest.mark.neo4j
WRITERS = 6
ROUNDS = 8


@pytest.fixture
def stores(graph: Services) -> Iterator[list[GraphStore]]:
    settings = graph.settings
    password = settings.neo4j.neo4j_password.get_secret_value() if settings.neo4j.neo4j_password else ""
    uri = str(settings.neo4j.neo4j_uri)
    opened = [
        GraphStore(open_driver(uri, settings.neo4j.neo4j_username, password), graph.store.catalog, settings)
        for _ in range(WRITERS)
    ]
    yield opened
    for store in opened:
        store.close()


def count(graph: Services, cypher: str) -> int:
    records, _, _ = graph.store.driver.execute_query(cypher, database_=graph.store.database)
    return int(records[0]["n"])


def test_racing_writers_leave_one_node_and_one_edge_per_identity(graph: Services, stores: list[GraphStore]) -> None:
    graph.tasks.create_task("race_task", "Racing writers write once", hypothesis_as_claim=False)
    claims = graph.tasks.add_claims("race_task", [f"claim {i}" for i in range(4)])
    errors: list[str] = []
    barrier = threading.Barrier(WRITERS)

    def write(index: int) -> None:
        evidence = EvidenceRepository(stores[index])
        order = claims if index % 2 else claims[::-1]  # opposite lock orders: deadlocks are retried by the driver
        for round_ in range(ROUNDS):
            barrier.wait()
            try:
                urls = [f"https://race{round_}.example/{k}" for k in range(4)]
                pages = evidence.upsert_pages([{"url": url} for url in urls]).ids
                fragments = evidence.upsert_fragments(
                    [{"page_id": page, "text": f"round {round_} passage {k}"} for k, page in enumerate(pages)]
                ).ids
                evidence.merge_citations(
                    [
                        {"citing_page_id": pages[0], "cited_page_id": page, "citation_source": "semantic_scholar"}
                        for page in pages[1:]
                    ]
                )
                evidence.create_stance_edges(
                    [
                        {"fragment_id": f, "claim_id": c, "relation": "SUPPORTS", "nli_confidence": 0.5 + index / 100}
                        for f in fragments
                        for c in order
                    ]
                )
            except LyraError as exc:
                errors.append(f"writer {index}, round {round_}: {exc}")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert errors == []
    assert count(graph, "MATCH (p:Page) RETURN count(p) AS n") == ROUNDS * 4
    assert count(graph, "MATCH (f:Fragment) RETURN count(f) AS n") == ROUNDS * 4
    for pattern in ("(a)-[r:EXTRACTED_FROM]->(b)", "(a)-[r:CITES]->(b)", "(a)-[r:IN_DOMAIN]->(b)"):
        assert count(graph, f"MATCH {pattern} WITH a, b, count(r) AS k WHERE k > 1 RETURN count(*) AS n") == 0
    edges = "MATCH (f:Fragment)-[r:SUPPORTS|REFUTES|NEUTRAL]->(c:Claim) WITH f, c, count(r) AS k"
    assert count(graph, f"{edges} WHERE k > 1 RETURN count(*) AS n") == 0
    assert count(graph, f"{edges} RETURN count(*) AS n") == ROUNDS * 4 * len(claims)
