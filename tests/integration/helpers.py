"""Small builders for integration tests (they write through Lyra's own repositories)."""

from __future__ import annotations

from collections.abc import Sequence

from lyra.bootstrap import Services
from lyra.models.confidence import EdgeEvidence


def seed_task(services: Services, task_id: str, claims: Sequence[str]) -> list[str]:
    services.tasks.create_task(task_id, f"hypothesis of {task_id}", hypothesis_as_claim=False)
    return services.tasks.add_claims(task_id, list(claims))


def seed_fragments(services: Services, count: int, prefix: str = "frag") -> list[str]:
    pages = services.evidence.upsert_pages(
        [{"url": f"https://example.org/{prefix}/{i}", "domain_category": "academic"} for i in range(count)]
    ).ids
    return services.evidence.upsert_fragments(
        [{"page_id": pages[i], "text": f"{prefix} text {i}"} for i in range(count)]
    ).ids


def write_edges(
    services: Services,
    claim_id: str,
    fragment_ids: Sequence[str],
    edges: Sequence[EdgeEvidence],
    categories: Sequence[str] | None = None,
) -> list[str]:
    rows = [
        {
            "fragment_id": fragment_ids[i],
            "claim_id": claim_id,
            "relation": e.relation,
            "nli_confidence": e.nli_confidence,
            "source_domain_category": categories[i % len(categories)] if categories else None,
        }
        for i, e in enumerate(edges)
    ]
    ids = services.evidence.create_stance_edges(rows).ids
    corrected = [ids[i] for i, e in enumerate(edges) if e.edge_human_corrected]
    if corrected:
        # Test-only shortcut: the feedback tool (edge_correct) will own this write.
        services.store.driver.execute_query(
            "UNWIND $ids AS id MATCH ()-[r:SUPPORTS|REFUTES|NEUTRAL {id: id}]->() SET r.edge_human_corrected = true",
            ids=corrected,
            database_=services.store.database,
        )
    return ids
