"""Load a small evidence graph described in JSON (used by the demo and for hand-made examples).

Format (local ``key``s tie the parts together; ids are assigned by Lyra)::

    {"task": {"id": "...", "hypothesis": "..."},
     "claims":    [{"key": "c1", "text": "..."}],            # the hypothesis is claim key "hypothesis"
     "pages":     [{"key": "p1", "url": "...", "doi": ..., "title": ..., "year": ..., "venue": ...,
                    "domain_category": ..., "page_type": ...}],
     "fragments": [{"key": "f1", "page": "p1", "text": "...", "position": 0}],
     "edges":     [{"fragment": "f1", "claim": "c1", "relation": "SUPPORTS", "nli_confidence": 0.9}],
     "citations": [{"citing": "p1", "cited": "p2", "citation_source": "openalex"}]}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from lyra.core.errors import ConflictError, InvalidInputError
from lyra.graph.evidence import EvidenceRepository
from lyra.models.graph import CitationIn, ClaimIn, FragmentIn, PageIn, StanceEdgeIn, TaskCreate
from lyra.models.validation import parse_many, parse_one
from lyra.services.tasks import TaskService


class ImportReport(BaseModel):
    task_id: str
    claims: int
    pages: int
    fragments: int
    edges: int
    citations: int


def _check_key(known: set[str], key: Any, field: str) -> None:
    if not isinstance(key, str) or key not in known:
        raise InvalidInputError(field, f"unknown key {key!r}")


def load_graph_file(path: Path, tasks: TaskService, evidence: EvidenceRepository) -> ImportReport:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInputError(str(path), f"cannot read JSON: {exc}") from None
    return load_graph(data, tasks, evidence)


@dataclass(frozen=True)
class CheckedGraph:
    """A graph document's rows as validated models, in input order (fragment, edge and citation ids are
    placeholders: the rows refer to each other by the document's keys)."""

    task: TaskCreate
    claims: list[ClaimIn]
    pages: list[PageIn]
    fragments: list[FragmentIn]
    edges: list[StanceEdgeIn]
    citations: list[CitationIn]


def check_graph(data: dict[str, Any]) -> CheckedGraph:
    """Validate a graph document in full (every key resolved, every row's fields) without writing anything; the
    first problem raises InvalidInputError naming the field."""
    allowed = {"task", "claims", "pages", "fragments", "edges", "citations"}
    for key in data:
        if key not in allowed:
            raise InvalidInputError(key, "unknown field")
    task = data.get("task") or {}
    claims = data.get("claims", [])
    pages = data.get("pages", [])
    fragments = data.get("fragments", [])
    edges = data.get("edges", [])
    citations = data.get("citations", [])

    # Resolve every key before writing anything.
    page_keys = [p.get("key") for p in pages]
    fragment_keys = [f.get("key") for f in fragments]
    claim_keys = ["hypothesis", *(c.get("key") for c in claims)]
    for field, keys in (("pages", page_keys), ("fragments", fragment_keys), ("claims", claim_keys[1:])):
        for index, key in enumerate(keys):
            if not isinstance(key, str) or not key:
                raise InvalidInputError(f"{field}[{index}].key", "a non-empty string key is required")
    known_pages, known_fragments, known_claims = set(page_keys), set(fragment_keys), set(claim_keys)
    for i, f in enumerate(fragments):
        _check_key(known_pages, f.get("page"), f"fragments[{i}].page")
    for i, e in enumerate(edges):
        _check_key(known_fragments, e.get("fragment"), f"edges[{i}].fragment")
        _check_key(known_claims, e.get("claim"), f"edges[{i}].claim")
    for i, c in enumerate(citations):
        _check_key(known_pages, c.get("citing"), f"citations[{i}].citing")
        _check_key(known_pages, c.get("cited"), f"citations[{i}].cited")

    # Validate every row's fields too, so bad input writes nothing at all.
    task_spec = parse_one(TaskCreate, {"id": task.get("id"), "hypothesis": task.get("hypothesis")}, "task")
    for index, c in enumerate(claims):  # ClaimIn takes fragment ids, which do not exist before an import writes them
        if isinstance(c, dict) and "source_fragment_ids" in c:
            raise InvalidInputError(f"claims[{index}].source_fragment_ids", "unknown field")
    claim_rows = parse_many(ClaimIn, [{k: v for k, v in c.items() if k != "key"} for c in claims], "claims")
    page_rows = parse_many(PageIn, [{k: v for k, v in p.items() if k != "key"} for p in pages], "pages")
    fragment_rows = parse_many(
        FragmentIn,
        [{"page_id": "x", **{k: v for k, v in f.items() if k not in ("key", "page")}} for f in fragments],
        "fragments",
    )
    edge_rows = parse_many(
        StanceEdgeIn,
        [
            {
                "fragment_id": "x",
                "claim_id": "x",
                **{k: v for k, v in e.items() if k not in ("fragment", "claim")},
            }
            for e in edges
        ],
        "edges",
    )
    citation_rows = parse_many(
        CitationIn,
        [{"citing_page_id": "a", "cited_page_id": "b", "citation_source": c.get("citation_source")} for c in citations],
        "citations",
    )
    return CheckedGraph(task_spec, claim_rows, page_rows, fragment_rows, edge_rows, citation_rows)


def load_graph(data: dict[str, Any], tasks: TaskService, evidence: EvidenceRepository) -> ImportReport:
    check_graph(data)
    task = data.get("task") or {}
    claims = data.get("claims", [])
    pages = data.get("pages", [])
    fragments = data.get("fragments", [])
    edges = data.get("edges", [])
    citations = data.get("citations", [])
    page_keys = [p.get("key") for p in pages]
    fragment_keys = [f.get("key") for f in fragments]
    claim_keys = ["hypothesis", *(c.get("key") for c in claims)]
    if tasks.tasks.exists(str(task.get("id"))):
        raise ConflictError(f"task {task.get('id')!r} already exists", hint="clean it up first or pick another id")

    created = tasks.create_task(str(task.get("id")), str(task.get("hypothesis", "")))
    task_id = created["id"]
    claim_ids = dict(
        zip(
            claim_keys,
            created["claim_ids"] + tasks.add_claims(task_id, [c.get("text", "") for c in claims]),
            strict=True,
        )
    )
    page_ids = dict(
        zip(
            page_keys,
            evidence.upsert_pages([{k: v for k, v in p.items() if k != "key"} for p in pages]).ids,
            strict=True,
        )
    )
    # the task read every page of its document: its evidence is credited to them (see record_task_reads)
    evidence.record_task_reads(task_id, sorted(set(page_ids.values())), "graph_import")
    fragment_rows = [
        {"page_id": page_ids[f["page"]], **{k: v for k, v in f.items() if k not in ("key", "page")}} for f in fragments
    ]
    fragment_ids = dict(zip(fragment_keys, evidence.upsert_fragments(fragment_rows).ids, strict=True))
    page_category = {p["key"]: p.get("domain_category", "unverified") for p in pages}
    fragment_page = {f["key"]: f["page"] for f in fragments}
    edge_rows = [
        {
            "fragment_id": fragment_ids[e["fragment"]],
            "claim_id": claim_ids[e["claim"]],
            "relation": e.get("relation"),
            "nli_confidence": e.get("nli_confidence"),
            "source_domain_category": page_category[fragment_page[e["fragment"]]],
            "cause_id": e.get("cause_id", "example_graph"),
        }
        for e in edges
    ]
    evidence.create_stance_edges(edge_rows)
    evidence.merge_citations(
        [
            {
                "citing_page_id": page_ids[c["citing"]],
                "cited_page_id": page_ids[c["cited"]],
                "citation_source": c.get("citation_source"),
            }
            for c in citations
        ]
    )
    return ImportReport(
        task_id=task_id,
        claims=len(claim_ids),
        pages=len(pages),
        fragments=len(fragments),
        edges=len(edges),
        citations=len(citations),
    )
