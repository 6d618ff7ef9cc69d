"""`python -m benchmarks.scale --floor`: how far below Lyra's write path a Neo4j write of the same rows can go at all.

For the two largest ingest steps (fragments and stance edges), on rows of the run's own shape, three writes are
timed side by side, twice each in alternating order:

* **transfer** — the batches are sent and their ids read back, nothing written (``benchmarks/cypher/floor_transfer``);
* **blind create** — the nodes or relationships created with no identity check at all
  (``benchmarks/cypher/floor_create_fragments``, ``floor_create_stance_edges``): no MERGE on the text hash, no check for
  a pair's existing edge, no lock on the claim, no stored sums. This is *not* a write Lyra could use (it breaks
  decision record 0002 and the one-edge-per-pair rule); it is the fastest a transactional write of these rows can be;
* **Lyra** — the real write path (``EvidenceRepository.upsert_fragments`` / ``create_stance_edges``, Python
  validation included), as the rounds time it.

Each write gets rows of its own (fresh texts, new pairs) hung on the run's pages and claims, so nothing is found
again; the run's clean-up removes them with the rest (pages with their fragments, the task with its claims).
If the blind create alone is slower than SQLite's step, no change of Lyra's statements can bring the transactional
ingest to the SQLite rate: only the offline importer can.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import neo4j
from pydantic import BaseModel

from benchmarks.scale_data import ScaleData
from lyra.bootstrap import Services
from lyra.core.ids import new_id, text_hash

CYPHER = Path(__file__).resolve().parent / "cypher"
FLOOR_REPEATS = 2  # each write twice, in alternating order


class FloorStep(BaseModel):
    """One ingest step written three ways (median seconds of the repeats) and SQLite's time for it in the rounds."""

    step: str
    rows: int
    transfer_seconds: float
    blind_seconds: float
    lyra_seconds: float
    sqlite_seconds: float | None

    def per_row_us(self, seconds: float) -> float:
        return seconds / self.rows * 1e6


def _statement(name: str) -> str:
    """A floor statement's text (``benchmarks/cypher/<name>.cypher``: the benchmark's own, not Lyra's catalog)."""
    return (CYPHER / f"{name}.cypher").read_text(encoding="utf-8")


def _in_batches(services: Services, name: str, rows: list[dict[str, Any]], batch: int) -> None:
    text = _statement(name)
    read = text.startswith("// mode: read")
    store = services.store

    @neo4j.unit_of_work(timeout=store.timeout)
    def work(tx: neo4j.ManagedTransaction, part: list[dict[str, Any]]) -> list[Any]:
        return [record.values() for record in tx.run(text, {"rows": part})]

    for start in range(0, len(rows), batch):
        part = rows[start : start + batch]
        with store.driver.session(database=store.database) as session:
            written = session.execute_read(work, part) if read else session.execute_write(work, part)
        if len(written) != len(part):
            raise RuntimeError(f"benchmarks/cypher/{name}.cypher wrote {len(written)} of {len(part)} rows")


def _fragment_rows(data: ScaleData, page_ids: list[str], salt: str) -> list[dict[str, Any]]:
    rows = []
    for i, text in enumerate(data.fragment_texts):
        fresh = f"{text} [{salt}]"
        rows.append(
            {
                "id": new_id("frg"),
                "page_id": page_ids[data.fragment_page[i]],
                "text": fresh,
                "text_hash": text_hash(fresh),
                "extraction_method": "text",
                "position": i,
            }
        )
    return rows


def _edge_rows(data: ScaleData, fragment_ids: list[str], claim_ids: list[str]) -> list[dict[str, Any]]:
    label = {"SUPPORTS": "supports", "REFUTES": "refutes", "NEUTRAL": "neutral"}
    edges = zip(data.edge_fragment, data.edge_claim, data.edge_relation, data.edge_confidence, strict=True)
    return [
        {
            "id": new_id("edg"),
            "fragment_id": fragment_ids[f],
            "claim_id": claim_ids[c],
            "relation": r,
            "nli_label": label[r],
            "nli_confidence": w,
            "source_domain_category": "unverified",
        }
        for f, c, r, w in edges
    ]


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _lyra_fragments(services: Services, rows: list[dict[str, Any]]) -> list[str]:
    given = [{"page_id": r["page_id"], "text": r["text"], "position": r["position"]} for r in rows]
    return services.evidence.upsert_fragments(given).ids


def _lyra_edges(services: Services, rows: list[dict[str, Any]]) -> None:
    keep = ("fragment_id", "claim_id", "relation", "nli_confidence", "source_domain_category")
    services.evidence.create_stance_edges([{k: r[k] for k in keep} for r in rows])


def measure_write_floor(
    services: Services,
    data: ScaleData,
    page_ids: list[str],
    claim_ids: list[str],
    sqlite_steps: dict[str, float],
) -> list[FloorStep]:
    """Time transfer / blind create / Lyra for the fragment and stance-edge steps (see the module)."""
    batch = services.evidence.batch_size
    times: dict[str, dict[str, list[float]]] = {
        step: {"transfer": [], "blind": [], "lyra": []} for step in ("fragments", "stance_edges")
    }

    def run(name: str, rows: list[dict[str, Any]]) -> Callable[[], None]:
        return lambda: _in_batches(services, name, rows, batch)

    for repeat in range(FLOOR_REPEATS):
        print(f"write floor {repeat + 1}/{FLOOR_REPEATS}: fragments and stance edges, three ways ...", file=sys.stderr)
        fragments = {way: _fragment_rows(data, page_ids, f"floor-{way}-{repeat}") for way in ("blind", "lyra")}
        order = ("blind", "lyra") if repeat % 2 == 0 else ("lyra", "blind")
        times["fragments"]["transfer"].append(_timed(run("floor_transfer", fragments["blind"]))[0])
        fragment_ids: dict[str, list[str]] = {}
        for way in order:
            if way == "blind":
                seconds, _ = _timed(run("floor_create_fragments", fragments[way]))
                fragment_ids[way] = [r["id"] for r in fragments[way]]
            else:
                seconds, fragment_ids[way] = _timed(partial(_lyra_fragments, services, fragments[way]))
            times["fragments"][way].append(seconds)
        edges = {way: _edge_rows(data, fragment_ids[way], claim_ids) for way in order}
        times["stance_edges"]["transfer"].append(_timed(run("floor_transfer", edges["blind"]))[0])
        for way in order:
            if way == "blind":
                seconds, _ = _timed(run("floor_create_stance_edges", edges[way]))
            else:
                seconds, _ = _timed(partial(_lyra_edges, services, edges[way]))
            times["stance_edges"][way].append(seconds)
    counts = {"fragments": len(data.fragment_texts), "stance_edges": len(data.edge_fragment)}
    return [
        FloorStep(
            step=step,
            rows=counts[step],
            transfer_seconds=statistics.median(ways["transfer"]),
            blind_seconds=statistics.median(ways["blind"]),
            lyra_seconds=statistics.median(ways["lyra"]),
            sqlite_seconds=sqlite_steps.get(step),
        )
        for step, ways in times.items()
    ]
