"""Batched writers for the evidence graph (pages, fragments, claims, stance edges, citations).

Every input list is validated in full (and its references checked) before the first write, so bad
input writes nothing. Writes go out as batched ``UNWIND`` statements from ``cypher/evidence/``;
re-discovered pages and fragments keep their existing ids (decision record 0002), claims and edges are new.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from lyra.core.errors import InvalidInputError, NotFoundError
from lyra.core.ids import new_id, task_label, text_hash, validate_task_id
from lyra.graph.store import GraphStore, Row, Transaction
from lyra.models.graph import CitationIn, ClaimIn, FragmentIn, PageIn, StanceEdgeIn, WriteResult
from lyra.models.validation import parse_many

T = TypeVar("T")


def _batches(rows: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def linked_groups(tokens: Sequence[Sequence[str]]) -> list[list[int]]:
    """Row indexes grouped by shared tokens, transitively (rows 1 and 2 share a token, rows 2 and 3 another: one
    group); groups in the order of their first row, rows in input order."""
    parent = list(range(len(tokens)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for index, row_tokens in enumerate(tokens):
        for token in row_tokens:
            other = owner.setdefault(token, index)
            if other != index:
                a, b = root(index), root(other)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for index in range(len(tokens)):
        groups.setdefault(root(index), []).append(index)
    return list(groups.values())


PAGE_FILLED_FIELDS = ("doi", "title", "year", "venue")


def page_groups(pages: Sequence[PageIn]) -> list[list[int]]:
    """decision record 0002 inside one input: indexes of the rows that are one page (sharing a DOI or a URL, also
    through each other), in the order of their first row."""
    return linked_groups([[f"url:{p.url}"] + ([f"doi:{p.doi}"] if p.doi else []) for p in pages])


def filled_page_fields(pages: Sequence[PageIn], group: list[int]) -> dict[str, Any]:
    """The DOI, title, year and venue of a group's page: the first row's, each missing one taken from the first
    other row that has it."""
    return {
        field: next((v for v in (getattr(pages[i], field) for i in group) if v is not None), None)
        for field in PAGE_FILLED_FIELDS
    }


class EvidenceRepository:
    def __init__(self, store: GraphStore, batch_size: int = 5000, parallel_writers: int = 2) -> None:
        self.store = store
        self.batch_size = batch_size
        self.parallel_writers = max(1, parallel_writers)

    # ------------------------------------------------------------------ helpers
    def _write_unique(self, query: str, rows: list[dict[str, Any]], keys: list[str]) -> WriteResult:
        """Write rows whose identity is ``keys[i]``; duplicates within the input share one write."""
        first_row_for_key: dict[str, int] = {}
        unique_rows: list[dict[str, Any]] = []
        for row, key in zip(rows, keys, strict=True):
            if key not in first_row_for_key:
                first_row_for_key[key] = len(unique_rows)
                unique_rows.append(row)
        written: list[Row] = []
        for batch in _batches(unique_rows, self.batch_size):
            result = self.store.run(query, {"rows": list(batch)})
            if len(result) != len(batch):
                raise NotFoundError(f"{query}: {len(batch) - len(result)} row(s) referenced missing nodes")
            written.extend(result)
        by_requested = {r["requested_id"]: r for r in written}
        ids = [by_requested[unique_rows[first_row_for_key[k]]["id"]]["id"] for k in keys]
        created_ids = [str(r["id"]) for r in written if r.get("created", True)]
        return WriteResult(ids=ids, created=len(created_ids), created_ids=created_ids)

    def _check_missing(self, query: str, params: dict[str, Any], field: str) -> None:
        rows = self.store.run(query, params)
        for column, values in rows[0].items():
            if values:
                kind = column.removeprefix("missing_").rstrip("s") or "node"
                raise NotFoundError(f"{field}: unknown {kind} id(s): {', '.join(map(str, values[:5]))}")

    # ------------------------------------------------------------------- writes
    def upsert_pages(self, pages: Sequence[PageIn | dict[str, Any]]) -> WriteResult:
        items = parse_many(PageIn, pages, "pages")
        rows = [
            {
                "id": new_id("pg"),
                "url": p.url,
                "doi": p.doi,
                "title": p.title,
                "domain": p.domain,
                "domain_category": p.domain_category,
                "year": p.year,
                "venue": p.venue,
                "page_type": p.page_type,
            }
            for p in items
        ]
        # Identity inside one input, as in the graph: rows sharing a DOI or a URL (transitively) are one page, written
        # once from the first such row, its missing DOI, title, year and venue filled in from the others. (Written as
        # separate rows of one statement, both would miss the page and the second would break the URL constraint.)
        keys = [""] * len(items)
        for group in page_groups(items):
            rows[group[0]].update(filled_page_fields(items, group))
            for index in group:
                keys[index] = f"page:{group[0]}"
        return self._write_unique("evidence/upsert_pages", rows, keys)

    def upsert_fragments(self, fragments: Sequence[FragmentIn | dict[str, Any]]) -> WriteResult:
        items = parse_many(FragmentIn, fragments, "fragments")
        page_ids = sorted({f.page_id for f in items})
        if page_ids:
            missing = self.store.run("evidence/missing_pages", {"page_ids": page_ids})[0]["missing"]
            if missing:
                raise NotFoundError(f"fragments: unknown page id(s): {', '.join(missing[:5])}")
        rows = [
            {
                "id": new_id("frg"),
                "page_id": f.page_id,
                "text": f.text,
                "text_hash": text_hash(f.text),
                "extraction_method": f.extraction_method,
                "position": f.position,
                "embedding": f.embedding,
                "scanned_with": f.scanned_with,
            }
            for f in items
        ]
        keys = [f"{r['text_hash']}|{r['page_id']}" for r in rows]
        result = self._write_unique("evidence/upsert_fragments", rows, keys)
        # Identical text on two pages is one fragment: make the returned ids agree per text_hash.
        by_hash: dict[str, str] = {}
        for key, fid in zip(keys, result.ids, strict=True):
            by_hash.setdefault(key.split("|", 1)[0], fid)
        return WriteResult(ids=[by_hash[k.split("|", 1)[0]] for k in keys], created=result.created)

    def create_claims(self, task_id: str, claims: Sequence[ClaimIn | dict[str, Any]]) -> WriteResult:
        """New claims of a task; each one linked to the fragments it was extracted from (``source_fragment_ids``)
        in the same transaction. Unknown fragment ids are refused before anything is written."""
        validate_task_id(task_id)
        items = parse_many(ClaimIn, claims, "claims")
        fragment_ids = sorted({f for c in items for f in c.source_fragment_ids})
        if fragment_ids:
            self._check_missing("evidence/missing_endpoints", {"fragment_ids": fragment_ids, "claim_ids": []}, "claims")
        rows = [
            {
                "id": new_id("clm"),
                "text": c.text,
                "source_fragment_ids": list(c.source_fragment_ids),
                "extraction_rules_version": c.extraction_rules_version,
            }
            for c in items
        ]
        ids: list[str] = []
        for batch in _batches(rows, self.batch_size):
            params = {"task_id": task_id, "task_label": task_label(task_id), "rows": list(batch)}

            def write(tx: Transaction, params: dict[str, Any] = params, size: int = len(batch)) -> list[str]:
                result = tx.run("evidence/create_claims", params)
                if len(result) != size:
                    raise NotFoundError(f"task {task_id!r} does not exist")
                expected = sum(len(r["source_fragment_ids"]) for r in params["rows"])
                if sum(r["linked"] for r in result) != expected:  # a fragment vanished since the check: roll back
                    raise NotFoundError("claims: a source fragment was removed while the claims were written")
                return [r["id"] for r in result]

            ids.extend(self.store.write_transaction("evidence/create_claims", write))
        return WriteResult(ids=ids, created=len(ids))

    def record_task_reads(self, task_id: str, page_ids: Sequence[str], cause_id: str) -> int:
        """Record that the task read these pages (``(Task)-[:READ]->(Page)``, once per task and page)."""
        total = 0
        for chunk in _batches(list(dict.fromkeys(page_ids)), self.batch_size):
            rows = self.store.run(
                "evidence/record_task_reads", {"task_id": task_id, "page_ids": list(chunk), "cause_id": cause_id}
            )
            total += int(rows[0]["pages"]) if rows else 0
        return total

    def create_stance_edges(self, edges: Sequence[StanceEdgeIn | dict[str, Any]]) -> WriteResult:
        items = parse_many(StanceEdgeIn, edges, "edges")
        self._check_missing(
            "evidence/missing_endpoints",
            {
                "fragment_ids": sorted({e.fragment_id for e in items}),
                "claim_ids": sorted({e.claim_id for e in items}),
            },
            "edges",
        )
        rows = [
            {
                "id": new_id("edg"),
                "fragment_id": e.fragment_id,
                "claim_id": e.claim_id,
                "relation": e.relation,
                "nli_label": e.nli_label,
                "nli_confidence": e.nli_confidence,
                "nli_confidence_raw": e.nli_confidence_raw,
                "nli_calibrator_version": e.nli_calibrator_version,
                "source_domain_category": e.source_domain_category,
                "target_domain_category": e.target_domain_category,
                "cause_id": e.cause_id,
                "nli_evidence_sentence": e.nli_evidence_sentence,
                "judge": e.judge,
                "instructions_version": e.instructions_version,
            }
            for e in items
        ]
        keys = [f"{e.fragment_id}|{e.claim_id}" for e in items]
        first_index: dict[str, int] = {}
        for index, (edge, key) in enumerate(zip(items, keys, strict=True)):
            first = first_index.setdefault(key, index)
            if first != index and items[first].relation != edge.relation:
                raise InvalidInputError(
                    f"edges[{index}].relation",
                    f"edges[{first}] already gives this (fragment, claim) pair the relation "
                    f"{items[first].relation}; a pair has at most one stance edge",
                )
        if not items:
            return WriteResult(ids=[], created=0)
        # One row per pair, grouped by claim: each claim is locked once per write, and batches hold disjoint claims,
        # so parallel writers never wait on each other.
        by_claim: dict[str, list[dict[str, Any]]] = {}
        for index in first_index.values():
            by_claim.setdefault(items[index].claim_id, []).append(rows[index])
        batches: list[list[dict[str, Any]]] = [[]]
        size = 0
        for claim_id, group in by_claim.items():
            if size >= self.batch_size:
                batches.append([])
                size = 0
            batches[-1].append({"claim_id": claim_id, "edges": group})
            size += len(group)

        def write(batch: list[dict[str, Any]]) -> list[Row]:
            return self.store.run("evidence/create_stance_edges", {"claims": batch})

        if len(batches) > 1 and self.parallel_writers > 1:
            with ThreadPoolExecutor(min(self.parallel_writers, len(batches)), thread_name_prefix="lyra-edges") as pool:
                results = list(pool.map(write, batches))
        else:
            results = [write(batch) for batch in batches]
        created_ids = {r["id"] for result in results for r in result}
        id_for_key = {key: rows[index]["id"] for key, index in first_index.items() if rows[index]["id"] in created_ids}
        # pairs that already had an edge keep it (any of the three types): read their ids
        known = [
            {"fragment_id": items[index].fragment_id, "claim_id": items[index].claim_id}
            for key, index in first_index.items()
            if key not in id_for_key
        ]
        for chunk in _batches(known, self.batch_size):
            for r in self.store.run("evidence/stance_edges_for_pairs", {"pairs": list(chunk)}):
                id_for_key[f"{r['fragment_id']}|{r['claim_id']}"] = r["id"]
        missing = len(first_index) - len(id_for_key)
        if missing:
            raise NotFoundError(f"evidence/create_stance_edges: {missing} row(s) referenced missing nodes")
        return WriteResult(ids=[id_for_key[k] for k in keys], created=len(created_ids))

    def merge_citations(self, citations: Sequence[CitationIn | dict[str, Any]]) -> WriteResult:
        items = parse_many(CitationIn, citations, "citations")
        for index, c in enumerate(items):
            if c.citing_page_id == c.cited_page_id:
                raise InvalidInputError(f"citations[{index}].cited_page_id", "a page cannot cite itself")
        page_ids = sorted({c.citing_page_id for c in items} | {c.cited_page_id for c in items})
        if page_ids:
            missing = self.store.run("evidence/missing_pages", {"page_ids": page_ids})[0]["missing"]
            if missing:
                raise NotFoundError(f"citations: unknown page id(s): {', '.join(missing[:5])}")
        rows = [
            {
                "id": new_id("cit"),
                "citing_page_id": c.citing_page_id,
                "cited_page_id": c.cited_page_id,
                "citation_source": c.citation_source,
            }
            for c in items
        ]
        keys = [f"{c.citing_page_id}|{c.cited_page_id}" for c in items]
        return self._write_unique("evidence/merge_citations", rows, keys)
