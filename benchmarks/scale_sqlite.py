"""Our reconstruction of the original system's SQL path (SQLite), run side by side with Lyra on the same data.

The seeds describe the original's storage as SQLite tables for pages, fragments, claims and one generic ``edges``
table (``source_type/source_id/target_type/target_id/relation/nli_confidence/...``), a summary view computing each
claim's alpha, beta and confidence with ``SUM(CASE ...)`` grouped by claim, and materials as that view plus an
evidence chain (edge -> fragment -> page). The seeds do not give its exact DDL; this module is written from that
description (stdlib ``sqlite3``; ``executemany`` inserts in one transaction per table, WAL journal). It is a
reference to measure against, not part of Lyra.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.scale_data import ScaleData

SCHEMA = """
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
CREATE TABLE pages (
  id TEXT PRIMARY KEY, url TEXT NOT NULL UNIQUE, doi TEXT, title TEXT, domain TEXT, year INTEGER, venue TEXT,
  page_type TEXT DEFAULT 'web', crawled_at TEXT DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE fragments (
  id TEXT PRIMARY KEY, page_id TEXT NOT NULL REFERENCES pages(id), text TEXT, text_hash TEXT,
  position INTEGER, created_at TEXT DEFAULT CURRENT_TIMESTAMP);
CREATE INDEX idx_fragments_page ON fragments(page_id);
CREATE INDEX idx_fragments_hash ON fragments(text_hash);
CREATE TABLE claims (
  id TEXT PRIMARY KEY, task_id TEXT NOT NULL, claim_text TEXT NOT NULL,
  claim_adoption_status TEXT DEFAULT 'adopted', created_at TEXT DEFAULT CURRENT_TIMESTAMP);
CREATE INDEX idx_claims_task ON claims(task_id);
CREATE TABLE edges (
  id TEXT PRIMARY KEY, source_type TEXT NOT NULL, source_id TEXT NOT NULL, target_type TEXT NOT NULL,
  target_id TEXT NOT NULL, relation TEXT NOT NULL, nli_confidence REAL, edge_human_corrected INTEGER DEFAULT 0,
  source_domain_category TEXT, citation_source TEXT, created_at TEXT DEFAULT CURRENT_TIMESTAMP);
CREATE INDEX idx_edges_source ON edges(source_type, source_id);
CREATE INDEX idx_edges_target ON edges(target_type, target_id);
CREATE UNIQUE INDEX idx_edges_pair ON edges(source_type, source_id, target_type, target_id, relation);
CREATE VIEW v_claim_evidence_summary AS
SELECT c.id AS claim_id, c.task_id AS task_id,
  SUM(CASE WHEN e.relation = 'supports' THEN 1 ELSE 0 END) AS support_count,
  SUM(CASE WHEN e.relation = 'refutes' THEN 1 ELSE 0 END) AS refute_count,
  SUM(CASE WHEN e.relation = 'neutral' THEN 1 ELSE 0 END) AS neutral_count,
  1.0 + COALESCE(SUM(CASE WHEN e.relation = 'supports'
    THEN CASE WHEN e.edge_human_corrected = 1 THEN 1.0 ELSE e.nli_confidence END END), 0.0) AS alpha,
  1.0 + COALESCE(SUM(CASE WHEN e.relation = 'refutes'
    THEN CASE WHEN e.edge_human_corrected = 1 THEN 1.0 ELSE e.nli_confidence END END), 0.0) AS beta
FROM claims c
LEFT JOIN edges e ON e.target_type = 'claim' AND e.target_id = c.id AND e.source_type = 'fragment'
GROUP BY c.id;
CREATE VIEW v_claim_confidence AS
SELECT claim_id, task_id, support_count, refute_count, neutral_count, alpha, beta,
  alpha / (alpha + beta) AS confidence
FROM v_claim_evidence_summary;
CREATE VIEW v_claim_evidence AS
SELECT e.target_id AS claim_id, e.id AS edge_id, e.relation AS relation, e.nli_confidence AS nli_confidence,
  e.source_domain_category AS source_domain_category, e.edge_human_corrected AS edge_human_corrected,
  f.id AS fragment_id, p.id AS page_id, p.url AS url, p.title AS title, p.year AS year, p.doi AS doi,
  p.venue AS venue
FROM edges e
JOIN fragments f ON e.source_type = 'fragment' AND f.id = e.source_id
JOIN pages p ON p.id = f.page_id
WHERE e.target_type = 'claim';
"""

SCORES = "SELECT claim_id, alpha, beta, confidence FROM v_claim_confidence WHERE task_id = ?"
SUMMARY = (
    "SELECT s.claim_id, c.claim_text, s.alpha, s.beta, s.confidence, s.support_count, s.refute_count, "
    "s.neutral_count FROM v_claim_confidence s JOIN claims c ON c.id = s.claim_id WHERE s.task_id = ? "
    "ORDER BY c.created_at, c.id"
)
YEARS = (
    "SELECT ev.claim_id, MIN(ev.year), MAX(ev.year) FROM v_claim_evidence ev "
    "JOIN claims c ON c.id = ev.claim_id WHERE c.task_id = ? GROUP BY ev.claim_id"
)
EVIDENCE = """
SELECT claim_id, edge_id, relation, fragment_id, page_id, url, title, year, doi, venue, nli_confidence,
       source_domain_category, edge_human_corrected
FROM (
  SELECT ev.*, ROW_NUMBER() OVER (
    PARTITION BY ev.claim_id
    ORDER BY CASE ev.relation WHEN 'neutral' THEN 1 ELSE 0 END, ev.nli_confidence DESC, ev.edge_id) AS rank
  FROM v_claim_evidence ev JOIN claims c ON c.id = ev.claim_id
  WHERE c.task_id = ?)
WHERE rank <= ?
"""


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


class SqliteReference:
    """One SQLite file holding one generated graph (under one task id)."""

    def __init__(self, path: Path, task_id: str) -> None:
        path.unlink(missing_ok=True)
        for suffix in ("-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        self.path = path
        self.task_id = task_id
        self.claim_ids: list[str] = []
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def _insert(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        self.db.execute("BEGIN")
        self.db.executemany(sql, rows)
        self.db.execute("COMMIT")

    def load(self, data: ScaleData) -> dict[str, float]:
        """Insert the graph step by step (ids made here, as the original did); seconds per step."""
        seconds: dict[str, float] = {}

        def step(name: str, fn: Callable[[], None]) -> None:
            start = time.perf_counter()
            fn()
            seconds[name] = time.perf_counter() - start

        page_ids = [_id("pg") for _ in data.page_urls]
        fragment_ids: list[str] = []
        claim_ids: list[str] = []

        def pages() -> None:
            rows = [
                (page_ids[i], url, data.page_domains[i], data.page_years[i]) for i, url in enumerate(data.page_urls)
            ]
            self._insert("INSERT OR IGNORE INTO pages (id, url, domain, year) VALUES (?, ?, ?, ?)", rows)

        def fragments() -> None:
            fragment_ids.extend(_id("frg") for _ in data.fragment_texts)
            rows = [
                (fragment_ids[i], page_ids[data.fragment_page[i]], text, data.fragment_hashes[i], i)
                for i, text in enumerate(data.fragment_texts)
            ]
            self._insert("INSERT INTO fragments (id, page_id, text, text_hash, position) VALUES (?, ?, ?, ?, ?)", rows)

        def claims() -> None:
            claim_ids.extend(_id("clm") for _ in data.claim_texts)
            rows = [(claim_ids[i], self.task_id, text) for i, text in enumerate(data.claim_texts)]
            self._insert("INSERT INTO claims (id, task_id, claim_text) VALUES (?, ?, ?)", rows)

        def stance_edges() -> None:
            rows = [
                (
                    _id("edg"),
                    fragment_ids[data.edge_fragment[i]],
                    claim_ids[data.edge_claim[i]],
                    data.edge_relation[i].lower(),
                    data.edge_confidence[i],
                )
                for i in range(len(data.edge_fragment))
            ]
            self._insert(
                "INSERT OR IGNORE INTO edges (id, source_type, source_id, target_type, target_id, relation, "
                "nli_confidence, source_domain_category) VALUES (?, 'fragment', ?, 'claim', ?, ?, ?, 'unverified')",
                rows,
            )

        def citations() -> None:
            rows = [
                (_id("cit"), page_ids[a], page_ids[b]) for a, b in zip(data.cite_citing, data.cite_cited, strict=True)
            ]
            self._insert(
                "INSERT OR IGNORE INTO edges (id, source_type, source_id, target_type, target_id, relation, "
                "citation_source) VALUES (?, 'page', ?, 'page', ?, 'cites', 'openalex')",
                rows,
            )

        step("pages", pages)
        step("fragments", fragments)
        step("claims", claims)
        step("stance_edges", stance_edges)
        step("citations", citations)
        self.claim_ids = claim_ids
        return seconds

    def scores(self) -> list[tuple[str, float, float, float]]:
        """Every claim's (id, alpha, beta, confidence) from the summary view."""
        return self.db.execute(SCORES, (self.task_id,)).fetchall()

    def materials(self, evidence_limit: int) -> list[dict[str, Any]]:
        """The summary view plus the evidence chain (top ``evidence_limit`` per claim) and the evidence years,
        assembled into one dict per claim with its evidence list."""
        years = {cid: (lo, hi) for cid, lo, hi in self.db.execute(YEARS, (self.task_id,))}
        evidence: dict[str, list[dict[str, Any]]] = {}
        for row in self.db.execute(EVIDENCE, (self.task_id, evidence_limit)):
            evidence.setdefault(row[0], []).append(
                {
                    "edge_id": row[1],
                    "relation": row[2],
                    "fragment_id": row[3],
                    "source_id": row[4],
                    "url": row[5],
                    "title": row[6],
                    "year": row[7],
                    "doi": row[8],
                    "venue": row[9],
                    "nli_confidence": row[10],
                    "source_domain_category": row[11],
                    "edge_human_corrected": bool(row[12]),
                }
            )
        claims: list[dict[str, Any]] = []
        for cid, text, alpha, beta, confidence, supports, refutes, neutral in self.db.execute(SUMMARY, (self.task_id,)):
            oldest, newest = years.get(cid, (None, None))
            items = evidence.get(cid, [])
            claims.append(
                {
                    "claim_id": cid,
                    "text": text,
                    "alpha": alpha,
                    "beta": beta,
                    "confidence": confidence,
                    "supports_count": supports,
                    "refutes_count": refutes,
                    "neutral_count": neutral,
                    "evidence": items,
                    "evidence_truncated": supports + refutes + neutral > len(items),
                    "evidence_years": {"oldest": oldest, "newest": newest},
                }
            )
        return claims
