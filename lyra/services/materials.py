"""Claim confidence for a task: alpha/beta aggregated in Neo4j, statistics derived from them.

`cypher/materials/claim_scores.cypher` is the only Cypher that gives a claim's alpha/beta (from the sums stored on
the claim, or from its stance edges when it has none): every reader of confidence (MCP/REST `get_materials`, the
CLI, the benchmarks) goes through :meth:`MaterialsService.scores` or :meth:`MaterialsService.materials`.
:meth:`MaterialsService.rescore` recomputes the stored sums from the edges (repair after hand edits). The evidence
lists, years and verification facts come from `cypher/materials/claim_evidence.cypher`, which does no confidence math.

get_materials pages through a task's claims: ``limit`` claims per page in a stable order (created_at, then id) and
an opaque ``next_cursor`` naming the last claim of the page. A large page's evidence is read in parts of
CLAIMS_PER_PART claims, ``parallel_queries`` read transactions at a time (Neo4j runs each on its own core), and each
part is assembled and validated as soon as it arrives, while Neo4j reads the next.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from typing import Any

import numpy as np
from pydantic import TypeAdapter

from lyra.core.errors import InvalidInputError
from lyra.core.gcpause import gc_paused
from lyra.graph.store import GraphStore, Row
from lyra.graph.tasks import TaskRepository
from lyra.models.api import (
    MATERIALS_PAGE_MAX,
    GetMaterialsRequest,
    MaterialClaim,
    Materials,
    RescoreReport,
    RescoreRequest,
)
from lyra.models.confidence import EdgeEvidence, beta_stats, credible_intervals, reference_alpha_beta
from lyra.services.provenance import independent_sources
from lyra.sources.untrusted import scanner_version, source_text

CLAIMS_PER_PART = 250
# stored sums and the same sums recomputed from the edges are added up in different orders: equal within this
SUMS_TOLERANCE = 1e-9
CURSOR_VERSION = 1
# toString() of a Neo4j DATETIME: 2025-11-24T04:02:39.123456789Z, or with an offset or a zone id
_NEO4J_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}(:\d{2})?)(\[[\w/+-]+\])?"
)


def verification(supporting_sources: int, refutes: int, security_rejections: int) -> dict[str, Any]:
    """Source verification from evidence only (decision record 0007: reason codes state facts; domain categories
    play no part): a dangerous pattern rejects; refuting evidence keeps a claim pending (never a block); two or
    more independent supporting sources (:mod:`lyra.services.provenance`) without refutation verify; less is
    insufficient."""
    if security_rejections:
        status, reason = "rejected", "dangerous_pattern"
    elif refutes:
        status, reason = "pending", "conflicting_evidence"
    elif supporting_sources >= 2:
        status, reason = "verified", "well_supported"
    else:
        status, reason = "pending", "insufficient_evidence"
    return {
        "source_verification_status": status,
        "verification_reason": reason,
        "independent_sources": supporting_sources,
    }


def beta_columns(alphas: list[float], betas: list[float]) -> tuple[list[float], list[float], list[float]]:
    """confidence, uncertainty and controversy of every Beta(alpha, beta) at once: the same arithmetic, in the same
    order, as :func:`lyra.models.confidence.beta_stats` (so the results are identical to the last bit)."""
    a = np.asarray(alphas, dtype=np.float64)
    b = np.asarray(betas, dtype=np.float64)
    total = a + b
    confidence = a / total
    uncertainty = np.sqrt((a * b) / (total * total * (total + 1.0)))
    evidence = total - 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        controversy = np.where(evidence > 0, np.minimum(a - 1.0, b - 1.0) / evidence, 0.0)
    return confidence.tolist(), uncertainty.tolist(), controversy.tolist()


def encode_cursor(task_id: str, created_at: str, claim_id: str) -> str:
    raw = json.dumps({"v": CURSOR_VERSION, "task": task_id, "at": created_at, "id": claim_id}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, task_id: str) -> tuple[str, str]:
    """(created_at, claim_id) of the claim a page ended with; InvalidInputError('cursor') for anything that is not a
    next_cursor this task's get_materials returned."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        data = None
    if (
        not isinstance(data, dict)
        or data.get("v") != CURSOR_VERSION
        or not isinstance(data.get("at"), str)
        or not isinstance(data.get("id"), str)
        or not isinstance(data.get("task"), str)
    ):
        raise InvalidInputError(
            "cursor", "not a cursor get_materials returned", hint="pass next_cursor of the previous page unchanged"
        )
    if data["task"] != task_id:
        raise InvalidInputError(
            "cursor", f"this cursor pages through task {data['task']!r}, not {task_id!r}", hint="start without cursor"
        )
    if not _NEO4J_DATETIME.fullmatch(data["at"]):
        raise InvalidInputError("cursor", "not a cursor get_materials returned")
    return data["at"], data["id"]


def column_rows(result: list[Row]) -> list[Row]:
    """A statement answering one row of parallel lists (one entry per claim; streaming one record per claim cost
    the driver more than the query itself): one dict per claim."""
    (row,) = result
    columns = list(row)
    return [dict(zip(columns, values, strict=True)) for values in zip(*row.values(), strict=True)]


EVIDENCE_COLUMNS = (
    "claim_id",
    "text",
    "claim_adoption_status",
    "claim_rejection_reason",
    "oldest",
    "newest",
    "supporting",
    "evidence_available",
    "evidence",
    "security_rejections",
    "coverage",
    "extracted",
)
PAGES_PER_ITEM = 5


RETRACTION_ORDER = {"retracted": 0, "has_concern": 1, "corrected": 2, "none": 3}


def page_retraction(values: list[Any]) -> dict[str, Any] | None:
    """A page's retraction status as retractions/set_page_status keeps it (None: never checked)."""
    state, notices, retracted_at = values
    if state is None:
        return None
    try:
        parsed = json.loads(notices) if isinstance(notices, str) else []
    except ValueError:
        parsed = []
    kept = [
        {k: n.get(k) for k in ("kind", "notice_doi", "date", "source")}
        for n in parsed
        if isinstance(n, dict) and isinstance(n.get("kind"), str)
    ]
    return {"state": state, "retracted_at": retracted_at, "notices": kept}


def evidence_item(raw: list[Any], passage_chars: int, reveal: bool = False) -> dict[str, Any]:
    """One evidence item of materials/claim_evidence as the Evidence model's fields; every text from the source
    (passage, decisive sentence, titles, venues) marked untrusted, and withheld when the scanner flags it (a passage
    stamped at ingest by the current scanner is known clean; see lyra.sources.untrusted)."""
    (edge_id, relation, fragment_id, pages, passage, nli_confidence, weight, category, corrected, sentence, total) = (
        raw[:11]
    )
    clean = raw[11] is not None and raw[11] == scanner_version()
    judge = raw[12] if len(raw) > 12 else None
    listed = [
        {
            "source_id": p[0],
            "url": p[1],
            "title": source_text(p[2], reveal=reveal),
            "year": p[3],
            "doi": p[4],
            "venue": source_text(p[5], reveal=reveal),
            "retraction": page_retraction(p[6:9]) if len(p) > 6 else None,
        }
        for p in pages
    ]
    states = [str(p["retraction"]["state"]) for p in listed if p["retraction"]]
    shown = min(states, key=lambda s: RETRACTION_ORDER.get(s, 9)) if states else None
    first = listed[0] if listed else {}
    return {
        "edge_id": edge_id,
        "relation": relation,
        "fragment_id": fragment_id,
        "source_id": first.get("source_id"),
        "url": first.get("url"),
        "title": first.get("title"),
        "year": first.get("year"),
        "doi": first.get("doi"),
        "venue": first.get("venue"),
        "pages": listed,
        "pages_total": total,
        "passage": source_text(passage, passage_chars, reveal=reveal, known_clean=clean),
        # the sentence is part of the passage (the judge drew it from there): clean when the passage is
        "decisive_sentence": source_text(sentence, passage_chars, reveal=reveal, known_clean=clean),
        "nli_confidence": nli_confidence,
        "weight": weight,
        "source_domain_category": category,
        "edge_human_corrected": corrected,
        "judge": judge,
        "retracted": bool(raw[13]) if len(raw) > 13 else False,
        "superseded": bool(raw[14]) if len(raw) > 14 else False,
        "retraction": shown,
    }


def coverage_of(values: list[Any]) -> dict[str, int] | None:
    """The claim's stored coverage counts (coverage/set_claim_coverage), None before its first ranking."""
    fragments, candidates, below_floor, own_source, judged = values
    if candidates is None:
        return None
    judged = min(int(judged or 0), int(candidates))
    return {
        "fragments": int(fragments or 0),
        "candidates": int(candidates),
        "judged": judged,
        "pending": int(candidates) - judged,
        "below_floor": int(below_floor or 0),
        "own_source": int(own_source or 0),
    }


def evidence_rows(result: list[Row], passage_chars: int, reveal: bool = False) -> list[Row]:
    """materials/claim_evidence answers one row holding one list per claim, its evidence items lists too: one dict
    per claim, one per item."""
    (row,) = result
    rows = [dict(zip(EVIDENCE_COLUMNS, values, strict=True)) for values in row["claims"]]
    for claim in rows:
        claim["evidence"] = [evidence_item(item, passage_chars, reveal) for item in claim["evidence"]]
        claim["independent_sources"] = independent_sources(claim.pop("supporting"))
        claim["coverage"] = coverage_of(claim["coverage"])
    return rows


def judge_rows(result: list[Row]) -> list[Row]:
    """materials/claim_judges answers one row holding one [claim_id, judges, offline] per claim: one dict per claim
    with ``judges`` (judge -> edges) and ``offline_only_confidence``: the confidence formula of decision record 0003
    (:func:`lyra.models.confidence.reference_alpha_beta`, the twin of materials/claim_scores, and
    :func:`~lyra.models.confidence.beta_stats`) over the offline judge's verdicts alone."""
    (row,) = result
    out: list[Row] = []
    for claim_id, judges, offline in row["claims"]:
        verdicts = [EdgeEvidence(relation=str(rel), nli_confidence=float(weight or 0.0)) for rel, weight in offline]
        out.append(
            {
                "claim_id": claim_id,
                "judges": {str(judge): int(edges) for judge, edges in sorted(judges)},
                "offline_only_confidence": beta_stats(reference_alpha_beta(verdicts)).confidence,
            }
        )
    return out


def judge_fields(row: Row | None) -> dict[str, Any]:
    """A claim's ``judges`` and ``offline_only_confidence`` (a claim deleted meanwhile: none, the prior's 0.5)."""
    if row is None:
        return {"judges": {}, "offline_only_confidence": beta_stats(reference_alpha_beta([])).confidence}
    return {"judges": row["judges"], "offline_only_confidence": row["offline_only_confidence"]}


Convert = Callable[[list[Row]], list[Row]]


class MaterialsService:
    def __init__(
        self,
        store: GraphStore,
        tasks: TaskRepository,
        parallel_queries: int = 3,
        batch_size: int = 5000,
        passage_chars: int = 700,
    ) -> None:
        self.passage_chars = passage_chars
        self.store = store
        self.tasks = tasks
        self.parallel_queries = parallel_queries
        self.batch_size = batch_size
        self._pool = ThreadPoolExecutor(max_workers=max(1, parallel_queries), thread_name_prefix="lyra-materials")

    # ------------------------------------------------------------------ queries
    def _claim_page(self, task_id: str, include_not_adopted: bool, cursor: str | None, limit: int | None) -> list[Row]:
        after_at, after_id = decode_cursor(cursor, task_id) if cursor is not None else (None, None)
        params = {
            "task_id": task_id,
            "include_not_adopted": include_not_adopted,
            "after_at": after_at,
            "after_id": after_id,
            "limit": limit if limit is not None else MATERIALS_PAGE_MAX * 100,
        }
        (row,) = self.store.run("materials/task_claim_page", params)
        return [{"claim_id": claim_id, "created_at": created_at} for claim_id, created_at in row["claims"]]

    def _parts(self, claim_ids: list[str]) -> list[list[str]]:
        """A long list of claims in contiguous parts of CLAIMS_PER_PART, aggregated in parallel read transactions
        (Neo4j runs each on its own core) while the parts already read are assembled."""
        return [claim_ids[i : i + CLAIMS_PER_PART] for i in range(0, len(claim_ids), CLAIMS_PER_PART)] or [[]]

    def _read(self, name: str, params: dict[str, Any], convert: Convert) -> list[Row]:
        return convert(self.store.run(name, params))

    # ------------------------------------------------------------------ scores
    def scores(self, task_id: str, include_not_adopted: bool = True) -> list[dict[str, Any]]:
        """Every claim's alpha, beta, confidence, uncertainty, controversy and counts, in no particular order: one
        statement, one pass over the stance edges, nothing else read (the cheap call for scoring a whole task).
        Unknown task: NotFoundError."""
        self.tasks.get(task_id)
        (row,) = self.store.run(
            "materials/claim_scores",
            {"task_id": task_id, "claim_ids": None, "include_not_adopted": include_not_adopted},
        )
        alphas, betas = row["alpha"], row["beta"]
        confidence, uncertainty, controversy = beta_columns(alphas, betas)
        return [
            {
                "claim_id": claim_id,
                "alpha": alpha,
                "beta": beta,
                "confidence": conf,
                "uncertainty": unc,
                "controversy": contro,
                "evidence_count": supports + refutes,
                "supports_count": supports,
                "refutes_count": refutes,
                "neutral_count": neutrals,
            }
            for claim_id, alpha, beta, conf, unc, contro, supports, refutes, neutrals in zip(
                row["claim_id"],
                alphas,
                betas,
                confidence,
                uncertainty,
                controversy,
                row["supports_count"],
                row["refutes_count"],
                row["neutral_count"],
                strict=True,
            )
        ]

    # ------------------------------------------------------------- stored sums
    def rescore(self, request: RescoreRequest) -> RescoreReport:
        """`lyra graph rescore`: recompute every claim's stored sums from its stance edges and store them (batched),
        or with ``check`` only compare them and list the first claims that differ. For graphs edited by hand; every
        Lyra write keeps the sums itself. Unknown task: NotFoundError."""
        if request.task_id is not None:
            self.tasks.get(request.task_id)
        params: dict[str, Any] = {"task_id": request.task_id, "tolerance": SUMS_TOLERANCE}
        if request.check:
            row = self.store.run("materials/check_claim_sums", {**params, "limit": request.limit})[0]
            claims, rescored, differences = row["checked"], 0, row["differences"]
        else:
            row = self.store.run("materials/rescore_claims", {**params, "batch_size": self.batch_size})[0]
            claims, rescored, differences = row["claims"], row["claims"], []
        return RescoreReport(
            task_id=request.task_id,
            check=request.check,
            claims=claims,
            unstored=row["unstored"],
            differing=row["differing"],
            rescored=rescored,
            differences=differences,
        )

    # ---------------------------------------------------------------- materials
    def materials(self, request: GetMaterialsRequest) -> Materials:
        """One page of the materials export (decision record 0003), computed now from the edges.

        Every claim's confidence, uncertainty, controversy, alpha, beta, evidence_count and the three counts
        always use all of its edges; ``evidence_limit`` only bounds the evidence listed (0 lists none). At most
        ``request.limit`` claims, after ``request.cursor``; ``next_cursor`` is set when more claims follow.
        Unknown task: NotFoundError; a cursor that is not one of this task's: InvalidInputError('cursor').
        """
        with gc_paused():
            return self._materials(request)

    def _materials(self, request: GetMaterialsRequest) -> Materials:
        task = self.tasks.get(request.task_id)
        opts = request.options
        page = self._claim_page(request.task_id, opts.include_not_adopted, request.cursor, request.limit + 1)
        more = len(page) > request.limit
        page = page[: request.limit]
        ids = [r["claim_id"] for r in page]
        # The scores of the page (one cheap statement) and the evidence in parts, all submitted at once: the pool
        # keeps `parallel_queries` statements running while this thread assembles and validates the parts read.
        score_params = {"task_id": request.task_id, "include_not_adopted": True, "claim_ids": ids}
        scored = self._pool.submit(self._read, "materials/claim_scores", score_params, column_rows)
        evidence_params = {
            "evidence_limit": opts.evidence_limit,
            "include_neutral": opts.include_neutral,
            "pages_per_item": PAGES_PER_ITEM,
        }
        convert = partial(evidence_rows, passage_chars=self.passage_chars, reveal=opts.reveal_flagged)
        parts = [
            self._pool.submit(self._read, "materials/claim_evidence", {**evidence_params, "claim_ids": part}, convert)
            for part in self._parts(ids)
        ]
        judged = [
            self._pool.submit(self._read, "materials/claim_judges", {"claim_ids": part}, judge_rows)
            for part in self._parts(ids)
        ]
        scores = scored.result()
        alphas = [r["alpha"] for r in scores]
        betas = [r["beta"] for r in scores]
        confidence, uncertainty, controversy = beta_columns(alphas, betas)
        intervals = credible_intervals(alphas, betas)
        by_id = {row["claim_id"]: i for i, row in enumerate(scores)}
        order = {claim_id: i for i, claim_id in enumerate(ids)}
        by_judges = {row["claim_id"]: row for part in judged for row in part.result()}
        claims: list[MaterialClaim] = []
        for part in parts:
            # a claim deleted since the page was read is left out
            extras = sorted((e for e in part.result() if e["claim_id"] in by_id), key=lambda e: order[e["claim_id"]])
            assembled: list[dict[str, Any]] = []
            for extra in extras:
                i = by_id[extra["claim_id"]]
                row, items = scores[i], extra["evidence"]
                assembled.append(
                    {
                        "claim_id": row["claim_id"],
                        "text": extra["text"],
                        "extracted": extra["extracted"],
                        "confidence": confidence[i],
                        "uncertainty": uncertainty[i],
                        "controversy": controversy[i],
                        "alpha": row["alpha"],
                        "beta": row["beta"],
                        "evidence_count": row["supports_count"] + row["refutes_count"],
                        "supports_count": row["supports_count"],
                        "refutes_count": row["refutes_count"],
                        "neutral_count": row["neutral_count"],
                        "claim_adoption_status": extra["claim_adoption_status"],
                        "claim_rejection_reason": extra["claim_rejection_reason"],
                        "credible_interval_95": intervals[i],
                        **verification(
                            extra["independent_sources"], row["refutes_count"], extra["security_rejections"]
                        ),
                        "coverage": extra["coverage"],
                        "evidence": items,
                        "evidence_truncated": extra["evidence_available"] > len(items),
                        "evidence_years": {"oldest": extra["oldest"], "newest": extra["newest"]},
                        **judge_fields(by_judges.get(row["claim_id"])),
                    }
                )
            # one pydantic-core validation per part, not one call per evidence item
            claims.extend(_CLAIMS.validate_python(assembled))
        last = page[-1] if page else None
        # the claims are validated models already (pydantic does not validate model instances again)
        return Materials.model_validate(
            {
                "task_id": task["id"],
                "hypothesis": task["hypothesis"],
                "status": task["status"],
                "claims": claims,
                "computed_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "next_cursor": encode_cursor(task["id"], last["created_at"], last["claim_id"])
                if more and last
                else None,
            }
        )

    def pages(self, request: GetMaterialsRequest) -> Iterator[Materials]:
        """Every page from ``request.cursor`` on (``request.limit`` claims each), one at a time, so a caller can
        stream a large task without holding it whole. Bounded: each page moves the cursor forward."""
        current = request
        for _ in range(math.ceil(MATERIALS_PAGE_MAX * 100 / max(1, request.limit)) + 1):
            page = self.materials(current)
            yield page
            if page.next_cursor is None:
                return
            current = current.model_copy(update={"cursor": page.next_cursor})


_CLAIMS = TypeAdapter(list[MaterialClaim])


def materials_json(pages: Iterator[Materials]) -> Iterator[bytes]:
    """One JSON document for every page, written as the pages arrive: the same object ``Materials.model_dump_json``
    gives for the whole task at once (the first page's header and ``computed_at``, every claim, ``next_cursor``
    null), without ever holding more than one page."""
    computed_at: str | None = None
    for page in pages:
        if computed_at is None:
            computed_at = page.computed_at
            head = page.model_dump_json(include={"task_id", "hypothesis", "status"})
            yield head[:-1].encode("utf-8") + b',"claims":['
            separator = b""
        if page.claims:
            yield separator + _CLAIMS.dump_json(page.claims)[1:-1]
            separator = b","
    if computed_at is None:
        raise ValueError("materials_json needs at least one page")
    yield b'],"computed_at":' + json.dumps(computed_at).encode("utf-8") + b',"next_cursor":null}'
