"""`lyra graph load --bulk`: a first big load through Neo4j's offline importer (``neo4j-admin database import``).

The importer writes a database's store files directly, tens of times faster than transactions, but only into a
stopped database, and it replaces that database whole. Neo4j Community has one user database (``neo4j``), so:

* the target is the **managed** instance ``NEO4J_URI`` points at (the importer needs its data folder);
* the database must be **empty** (a Lyra test marker aside, which is carried over): the import would replace
  whatever it holds, so a non-empty database is refused (ConflictError) — use ``lyra graph load`` without
  ``--bulk`` to add to existing data;
* the instance is **stopped, imported into and started again**, then the schema (constraints, indexes) is applied.

The graph document is the one ``lyra graph load`` reads (lyra/services/graph_import.py) and is validated by the same
code. decision record 0002 and the one-edge-per-pair rule hold inside the document: pages with the same DOI (else URL)
are one page, fragments with the same text are one fragment, and a (fragment, claim) pair gets one stance edge (two rows
giving a pair different relations are refused).
"""

from __future__ import annotations

import csv
import json
import shutil
import time
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lyra.core.errors import ConflictError, InvalidInputError
from lyra.core.ids import new_id, task_label, text_hash
from lyra.core.settings import Settings
from lyra.graph.catalog import CypherCatalog
from lyra.graph.evidence import filled_page_fields, page_groups
from lyra.graph.server import LocalNeo4j, instance_for_uri
from lyra.graph.store import GraphStore, open_driver
from lyra.models.graph import IMPORTED_JUDGE
from lyra.services.graph_import import ImportReport, check_graph


class BulkImportReport(ImportReport):
    instance: str
    seconds_files: float
    seconds_import: float
    seconds_restart: float
    seconds_schema: float
    seconds_total: float


def _write(path: Path, header: list[str], rows: Iterable[list[Any]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def _store(settings: Settings) -> GraphStore:
    password = settings.neo4j.neo4j_password.get_secret_value() if settings.neo4j.neo4j_password else ""
    driver = open_driver(settings.neo4j.neo4j_uri or "", settings.neo4j.neo4j_username, password)
    return GraphStore(driver, CypherCatalog.load(settings.paths.cypher_dir), settings)


def bulk_load_graph_file(path: Path, settings: Settings) -> BulkImportReport:
    """`lyra graph load PATH --bulk`: read the JSON document and import it offline."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInputError(str(path), f"cannot read JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidInputError(str(path), "a graph document is a JSON object")
    return bulk_load_graph(data, settings)[0]


def bulk_load_graph(data: dict[str, Any], settings: Settings) -> tuple[BulkImportReport, dict[str, str]]:
    """Import a graph document into the empty managed instance offline; (report, claim id by claim key)."""
    started = time.perf_counter()
    checked = check_graph(data)
    instance = instance_for_uri(settings.neo4j.neo4j_uri, settings.paths.state_dir)
    if instance is None:
        raise InvalidInputError(
            "NEO4J_URI",
            f"{settings.neo4j.neo4j_uri!r} is not a managed instance; "
            "the offline importer writes the server's own files",
            hint="point NEO4J_URI at a managed instance (`lyra neo4j env`), or load without --bulk",
        )
    server = LocalNeo4j(settings, instance)
    store = _store(settings)
    try:
        summary = store.run("admin/database_summary")[0]
    finally:
        store.close()
    if summary["nodes"] - summary["test_markers"]:
        raise ConflictError(
            f"the database of instance {instance!r} holds {summary['nodes']} nodes; the offline importer replaces "
            "the whole database, so it only loads into an empty one",
            hint="use `lyra graph load` without --bulk to add to existing data",
        )

    now = datetime.now(UTC).isoformat()
    task = checked.task
    claims_doc = data.get("claims", [])
    pages_doc = data.get("pages", [])
    fragments_doc = data.get("fragments", [])
    edges_doc = data.get("edges", [])
    citations_doc = data.get("citations", [])

    # pages: rows sharing a DOI or a URL (transitively) are one page inside the document, as in the graph (decision
    # record 0002): the first row's values, its missing DOI, title, year and venue filled in from the others; domains
    # created on first sight
    page_id_by_key: dict[str, str] = {}
    page_rows: list[list[Any]] = []
    domain_category: dict[str, str] = {}
    page_domain: list[list[Any]] = []
    pages_in = checked.pages
    for group in page_groups(pages_in):
        page = pages_in[group[0]]
        pid = new_id("pg")
        filled = filled_page_fields(pages_in, group)
        domain = page.domain or ""
        page_rows.append(
            [
                pid,
                page.url,
                filled["doi"],
                filled["title"],
                domain,
                filled["year"],
                filled["venue"],
                page.page_type,
                now,
            ]
        )
        domain_category.setdefault(domain, page.domain_category)
        page_domain.append([pid, domain])
        for index in group:
            page_id_by_key[pages_doc[index]["key"]] = pid

    # fragments: one per text_hash (global identity), linked to every page that holds it
    fragment_id_by_hash: dict[str, str] = {}
    fragment_id_by_key: dict[str, str] = {}
    fragment_page_of_key: dict[str, str] = {}
    fragment_rows: list[list[Any]] = []
    extracted: set[tuple[str, str]] = set()
    for doc, fragment in zip(fragments_doc, checked.fragments, strict=True):
        digest = text_hash(fragment.text)
        fid = fragment_id_by_hash.get(digest)
        if fid is None:
            fid = fragment_id_by_hash[digest] = new_id("frg")
            fragment_rows.append([fid, digest, fragment.text, fragment.extraction_method, fragment.position])
        fragment_id_by_key[doc["key"]] = fid
        fragment_page_of_key[doc["key"]] = doc["page"]
        extracted.add((fid, page_id_by_key[doc["page"]]))

    claim_id_by_key = {"hypothesis": new_id("clm")}
    claim_rows: list[list[Any]] = [[claim_id_by_key["hypothesis"], task.id, task.hypothesis, "adopted", now]]
    for doc, claim in zip(claims_doc, checked.claims, strict=True):
        cid = claim_id_by_key[doc["key"]] = new_id("clm")
        claim_rows.append([cid, task.id, claim.text, "adopted", now])

    # stance edges: one per (fragment, claim) pair; a second row for a pair must agree on the relation
    page_category = {p["key"]: p.get("domain_category", "unverified") for p in pages_doc}
    edge_rows: dict[str, list[list[Any]]] = {"SUPPORTS": [], "REFUTES": [], "NEUTRAL": []}
    relation_of_pair: dict[tuple[str, str], tuple[int, str]] = {}
    for index, (doc, edge) in enumerate(zip(edges_doc, checked.edges, strict=True)):
        pair = (fragment_id_by_key[doc["fragment"]], claim_id_by_key[doc["claim"]])
        if pair in relation_of_pair:
            first, relation = relation_of_pair[pair]
            if relation != edge.relation:
                raise InvalidInputError(
                    f"edges[{index}].relation",
                    f"edges[{first}] already gives this (fragment, claim) pair the relation {relation}; "
                    "a pair has at most one stance edge",
                )
            continue
        relation_of_pair[pair] = (index, edge.relation)
        category = page_category[fragment_page_of_key[doc["fragment"]]]
        edge_rows[edge.relation].append(
            [
                *pair,
                new_id("edg"),
                edge.nli_label,
                edge.nli_confidence,
                edge.nli_confidence_raw,
                edge.nli_calibrator_version,
                category,
                edge.target_domain_category,
                "false",
                doc.get("cause_id", "example_graph"),
                now,
                edge.judge or IMPORTED_JUDGE,
                0,
                now,
                edge.instructions_version,
            ]
        )

    # each claim's stored sums (materials/claim_scores), as create_stance_edges keeps them: no edge is corrected yet
    sums = {row[0]: [0.0, 0.0, 0, 0, 0] for row in claim_rows}
    for relation, rows in edge_rows.items():
        for row in rows:
            claim_sums = sums[row[1]]
            if relation == "SUPPORTS":
                claim_sums[0] += row[4]
                claim_sums[2] += 1
            elif relation == "REFUTES":
                claim_sums[1] += row[4]
                claim_sums[3] += 1
            else:
                claim_sums[4] += 1
    for row in claim_rows:
        row.extend(sums[row[0]])

    cites: dict[tuple[str, str], list[Any]] = {}
    for index, (doc, citation) in enumerate(zip(citations_doc, checked.citations, strict=True)):
        pair = (page_id_by_key[doc["citing"]], page_id_by_key[doc["cited"]])
        if pair[0] == pair[1]:
            raise InvalidInputError(f"citations[{index}].cited", "a page cannot cite itself")
        cites.setdefault(pair, [*pair, new_id("cit"), citation.citation_source, now])

    folder = server.dir / "import" / f"bulk-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        files = {name: folder / f"{name}.csv" for name in ("task", "claims", "pages", "domains", "fragments")}
        _write(
            files["task"],
            ["id:ID(Task)", "hypothesis", "status", "created_at:datetime", "updated_at:datetime"],
            [[task.id, task.hypothesis, "created", now, now]],
        )
        _write(
            files["claims"],
            [
                "id:ID(Claim)",
                "task_id",
                "text",
                "claim_adoption_status",
                "created_at:datetime",
                "evidence_support_weight:double",
                "evidence_refute_weight:double",
                "evidence_supports:long",
                "evidence_refutes:long",
                "evidence_neutrals:long",
            ],
            claim_rows,
        )
        _write(
            files["pages"],
            ["id:ID(Page)", "url", "doi", "title", "domain", "year:long", "venue", "page_type", "crawled_at:datetime"],
            page_rows,
        )
        _write(files["domains"], ["name:ID(Domain)", "domain_category"], ([n, c] for n, c in domain_category.items()))
        _write(
            files["fragments"],
            ["id:ID(Fragment)", "text_hash", "text", "extraction_method", "position:long"],
            fragment_rows,
        )
        nodes: list[tuple[str, Path]] = [
            ("Task", files["task"]),
            (f"Claim:{task_label(task.id)}", files["claims"]),
            ("Page", files["pages"]),
            ("Domain", files["domains"]),
            ("Fragment:Unsequenced", files["fragments"]),  # numbered for the FAISS caches like any new fragment
        ]
        if summary["test_markers"]:
            marker = folder / "marker.csv"
            _write(marker, ["id:ID(LyraTestDatabase)", "created_at:datetime"], [["lyra-test", now]])
            nodes.append(("LyraTestDatabase", marker))
        relationships: list[tuple[str, Path]] = []

        def rel(kind: str, header: list[str], rows: Iterable[Iterable[Any]]) -> None:
            path = folder / f"rel_{kind.lower()}.csv"
            _write(path, header, (list(r) for r in rows))
            relationships.append((kind, path))

        rel("HAS_CLAIM", [":START_ID(Task)", ":END_ID(Claim)"], ([task.id, row[0]] for row in claim_rows))
        rel("IN_DOMAIN", [":START_ID(Page)", ":END_ID(Domain)"], page_domain)
        # the task read every page of its document: its evidence is credited to them (see record_task_reads)
        rel(
            "READ",
            [":START_ID(Task)", ":END_ID(Page)", "first_read_at:datetime", "last_read_at:datetime", "cause_id"],
            ([task.id, row[0], now, now, "bulk_import"] for row in page_rows),
        )
        rel("EXTRACTED_FROM", [":START_ID(Fragment)", ":END_ID(Page)"], sorted(extracted))
        stance_header = [
            ":START_ID(Fragment)",
            ":END_ID(Claim)",
            "id",
            "nli_label",
            "nli_confidence:double",
            "nli_confidence_raw:double",
            "nli_calibrator_version:long",
            "source_domain_category",
            "target_domain_category",
            "edge_human_corrected:boolean",
            "cause_id",
            "created_at:datetime",
            "judge",
            "judge_rank:long",
            "judged_at:datetime",
            "instructions_version",
        ]
        for relation, rows in edge_rows.items():
            rel(relation, stance_header, rows)
        rel(
            "CITES",
            [":START_ID(Page)", ":END_ID(Page)", "id", "citation_source", "created_at:datetime"],
            cites.values(),
        )
        files_done = time.perf_counter()
        server.stop()
        try:
            server.offline_import(nodes, relationships)
        finally:
            imported = time.perf_counter()
            server.start()  # also after a failed import: the instance is never left stopped
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    restarted = time.perf_counter()
    store = _store(settings)
    try:
        store.apply_schema()
    finally:
        store.close()
    done = time.perf_counter()
    report = BulkImportReport(
        task_id=task.id,
        claims=len(claim_rows),
        pages=len(page_rows),
        fragments=len(fragment_rows),
        edges=sum(len(rows) for rows in edge_rows.values()),
        citations=len(cites),
        instance=instance,
        seconds_files=files_done - started,
        seconds_import=imported - files_done,
        seconds_restart=restarted - imported,
        seconds_schema=done - restarted,
        seconds_total=done - started,
    )
    return report, claim_id_by_key
