"""OpenAlex (``/works``): search, lookups by id or DOI, batched id filters, referenced works and citing works.

Costs shape the calls (late-2026 pricing): a singleton ``/works/{id}`` is free, a filter costs a little and
``search=`` ten times more. So lookups of one id use the singleton route, batches use one
``filter=openalex_id:W1|W2|…`` (or ``doi:``, ``pmid:``) call per 50 ids, references are the first 20
``referenced_works`` resolved in ONE filter call (decision record 0011), citing works page through ``filter=cites:W…``
by page number (cursor paging needs a key). Only the root fields Lyra reads are asked for (``select``).
Abstracts come as ``abstract_inverted_index`` and are rebuilt by :func:`rebuild_abstract`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from lyra.core.errors import SourceUnavailable
from lyra.sources.scholarly.http import ApiHttp
from lyra.sources.scholarly.papers import (
    ApiName,
    Paper,
    PaperId,
    arxiv_doi,
    normalise_arxiv,
    normalise_doi,
    normalise_openalex,
)

log = logging.getLogger(__name__)

SELECT = (
    "id,doi,ids,title,display_name,publication_year,cited_by_count,authorships,primary_location,"
    "open_access,best_oa_location,abstract_inverted_index,updated_date"
)
FILTER_MAX = 50  # ids OR-ed in one filter
PER_PAGE_MAX = 200
REFERENCES_MAX = 20  # decision record 0011: the first 20 referenced works, in one batched call

_keyless_warned = False
_keyless_lock = threading.Lock()


def warn_keyless_once() -> None:
    """Log, once per process, that OpenAlex runs on the keyless allowance."""
    global _keyless_warned
    with _keyless_lock:
        if _keyless_warned:
            return
        _keyless_warned = True
    log.warning(
        "OpenAlex runs without an API key (LYRA_OPENALEX_API_KEY unset): the keyless daily allowance is tiny, "
        "enough for a demo only; a free key from openalex.org buys real capacity"
    )


def rebuild_abstract(index: Mapping[str, Sequence[int]] | None) -> str | None:
    """The abstract text from OpenAlex's inverted index (word -> positions); None when there is none."""
    if not index:
        return None
    placed: dict[int, str] = {}
    for word, positions in index.items():
        for position in positions:
            placed[int(position)] = word
    text = " ".join(placed[i] for i in sorted(placed))
    return text or None


def _tail(url: object, prefix: str) -> str | None:
    if not isinstance(url, str) or not url:
        return None
    return url.removeprefix(prefix)


def paper_from_openalex(work: Mapping[str, Any]) -> Paper | None:
    """A :class:`Paper` from one OpenAlex work; None when it has no title."""
    title = work.get("title") or work.get("display_name")
    if not isinstance(title, str) or not title.strip():
        return None
    ids = work.get("ids") or {}
    doi_url = work.get("doi") or ids.get("doi")
    doi = normalise_doi(doi_url) if isinstance(doi_url, str) else None
    arxiv = normalise_arxiv(doi.removeprefix("10.48550/arxiv.")) if doi and doi.startswith("10.48550/arxiv.") else None
    pmid = _tail(ids.get("pmid"), "https://pubmed.ncbi.nlm.nih.gov/")
    location = work.get("primary_location") or {}
    source = location.get("source") or {} if isinstance(location, dict) else {}
    open_access = work.get("open_access") or {}
    best = work.get("best_oa_location") or {}
    pdf = (open_access.get("oa_url") if isinstance(open_access, dict) else None) or (
        best.get("pdf_url") if isinstance(best, dict) else None
    )
    year = work.get("publication_year")
    count = work.get("cited_by_count")
    updated = work.get("updated_date")
    return Paper(
        title=title.strip(),
        abstract=rebuild_abstract(work.get("abstract_inverted_index")),
        year=year if isinstance(year, int) else None,
        venue=(source.get("display_name") or None) if isinstance(source, dict) else None,
        citation_count=count if isinstance(count, int) else None,
        authors=tuple(
            a["author"]["display_name"]
            for a in work.get("authorships") or []
            if isinstance(a, dict) and isinstance(a.get("author"), dict) and a["author"].get("display_name")
        ),
        doi=doi,
        openalex_id=normalise_openalex(str(work.get("id") or "")),
        pmid=pmid.strip("/") if pmid else None,
        arxiv_id=arxiv,
        pdf_url=pdf or None,
        sources=("openalex",),
        updated=updated if isinstance(updated, str) and updated else None,
    )


class OpenAlex:
    """Client of the OpenAlex works API over one :class:`ApiHttp` (retries, rate limit, cache, budget)."""

    name: ApiName = "openalex"

    def __init__(self, http: ApiHttp, *, page_size: int = 100) -> None:
        self.http = http
        self.page_size = max(1, min(page_size, PER_PAGE_MAX))

    def _shape_error(self, what: str, value: object) -> SourceUnavailable:
        self.http.usage.add("errors")
        return SourceUnavailable(f"{self.name} answered {what} with an unexpected shape: {str(value)[:120]}")

    def _list(self, params: dict[str, str], what: str) -> tuple[list[Paper], int]:
        data = self.http.get("/works", params)
        if data is None:
            return [], 0
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            raise self._shape_error(what, data)
        count = (data.get("meta") or {}).get("count")
        papers = [p for work in data["results"] if isinstance(work, dict) and (p := paper_from_openalex(work))]
        return papers, count if isinstance(count, int) else 0

    def _pages(self, params: dict[str, str], limit: int, what: str) -> list[Paper]:
        per_page = min(self.page_size, limit)
        found: list[Paper] = []
        page = 1
        while len(found) < limit:
            papers, count = self._list({**params, "per_page": str(per_page), "page": str(page)}, what)
            found.extend(papers)
            if not papers or page * per_page >= count:
                break
            page += 1
        return found[:limit]

    def search(self, query: str, limit: int = 20) -> list[Paper]:
        """Full-text relevance search (``search=``: the dearest call; page numbers up to ``limit``)."""
        if limit <= 0:
            return []
        return self._pages({"search": query, "select": SELECT}, limit, "a search")

    def _work(self, key: str, select: str) -> dict[str, Any] | None:
        data = self.http.get(f"/works/{quote(key, safe=':/()')}", {"select": select})
        if data is None:
            return None
        if not isinstance(data, dict):
            raise self._shape_error("a work lookup", data)
        return data

    def paper(self, pid: PaperId) -> Paper | None:
        """The work ``pid`` names (singleton route: free), or None when OpenAlex does not know it (404) or cannot
        look such an id up (an S2 id). arXiv ids go through their DataCite DOI."""
        key = pid.openalex()
        if key is None:
            return None
        work = self._work(key, SELECT)
        return paper_from_openalex(work) if work else None

    def papers(self, ids: Sequence[PaperId]) -> list[Paper | None]:
        """Batch lookup: one ``filter`` call per 50 ids of a kind (OpenAlex ids, DOIs, PMIDs); same order as
        ``ids``, None where unknown. arXiv ids go through their DataCite DOI; S2 ids give None."""
        groups: dict[str, list[tuple[int, str]]] = {"openalex_id": [], "doi": [], "pmid": []}
        for i, pid in enumerate(ids):
            if pid.kind == "openalex":
                groups["openalex_id"].append((i, pid.value))
            elif pid.kind in ("doi", "arxiv"):
                doi = pid.value if pid.kind == "doi" else arxiv_doi(pid.value)
                if "," not in doi and "|" not in doi and "&" not in doi:  # OpenAlex refuses these in filters
                    groups["doi"].append((i, doi))
            elif pid.kind == "pmid":
                groups["pmid"].append((i, pid.value))
        out: list[Paper | None] = [None] * len(ids)
        for field, wanted in groups.items():
            for start in range(0, len(wanted), FILTER_MAX):
                chunk = wanted[start : start + FILTER_MAX]
                values = [f"https://doi.org/{v}" if field == "doi" else v for _, v in chunk]
                papers, _ = self._list(
                    {"filter": f"{field}:{'|'.join(values)}", "per_page": str(len(chunk)), "select": SELECT},
                    "a batch lookup",
                )
                by_value = {_id_of(p, field): p for p in papers}
                for i, value in chunk:
                    out[i] = by_value.get(value.lower() if field == "doi" else value)
        return out

    def _openalex_id(self, paper: Paper) -> str | None:
        if paper.openalex_id:
            return paper.openalex_id
        for pid in paper.identifiers():
            key = pid.openalex()
            if key is not None:
                work = self._work(key, "id")
                return normalise_openalex(str(work.get("id") or "")) if work else None
        return None

    def references(self, paper: Paper, limit: int = 100) -> list[Paper]:
        """The first ``min(limit, 20)`` of the work's ``referenced_works``, resolved in ONE filter call, in the
        order OpenAlex lists them (decision record 0011)."""
        if limit <= 0:
            return []
        key = paper.openalex_id or next((k for pid in paper.identifiers() if (k := pid.openalex())), None)
        if key is None:
            return []
        work = self._work(key, "id,referenced_works")
        if work is None:
            return []
        refs = [w for r in work.get("referenced_works") or [] if (w := normalise_openalex(str(r)))]
        refs = list(dict.fromkeys(refs))[: min(limit, REFERENCES_MAX)]
        if not refs:
            return []
        papers, _ = self._list(
            {"filter": f"openalex_id:{'|'.join(refs)}", "per_page": str(len(refs)), "select": SELECT},
            "a references lookup",
        )
        by_id = {p.openalex_id: p for p in papers}
        return [by_id[r] for r in refs if r in by_id]

    def citations(self, paper: Paper, limit: int = 100) -> list[Paper]:
        """Works citing ``paper`` (``filter=cites:W…``), paged by page number up to ``limit``."""
        if limit <= 0:
            return []
        work_id = self._openalex_id(paper)
        if work_id is None:
            return []
        return self._pages({"filter": f"cites:{work_id}", "select": SELECT}, limit, "a citations page")


def retraction_flags(client: OpenAlex, dois: Sequence[str]) -> dict[str, bool]:
    """OpenAlex's ``is_retracted`` per DOI (normalised, lower case), in one filter call per 50 DOIs; a DOI OpenAlex
    does not know is left out."""
    flags: dict[str, bool] = {}
    keys = sorted({d for d in (normalise_doi(x) for x in dois) if d})
    for start in range(0, len(keys), FILTER_MAX):
        chunk = keys[start : start + FILTER_MAX]
        data = client.http.get(
            "/works", {"filter": f"doi:{'|'.join(chunk)}", "per_page": str(len(chunk)), "select": "id,doi,is_retracted"}
        )
        if data is None:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            raise client._shape_error("a retraction lookup", data)
        for work in data["results"]:
            doi = normalise_doi(work.get("doi") or "") if isinstance(work, dict) else None
            if doi and isinstance(work.get("is_retracted"), bool):
                flags[doi.lower()] = work["is_retracted"]
    return flags


def _id_of(paper: Paper, field: str) -> str | None:
    if field == "openalex_id":
        return paper.openalex_id
    if field == "doi":
        return paper.doi
    return paper.pmid
