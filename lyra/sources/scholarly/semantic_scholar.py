"""Semantic Scholar's Graph API (``/graph/v1``): search, lookups by id, batch lookups, references and citations.

Only the fields Lyra uses are asked for (:data:`FIELDS`); ``isInfluential``, contexts and intents never are
(decision record 0011). Ids: the S2 paper id, ``DOI:``, ``PMID:``, ``ARXIV:``; an OpenAlex id has no S2 form and
looks up nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from lyra.core.errors import SourceUnavailable
from lyra.sources.scholarly.http import ApiHttp
from lyra.sources.scholarly.papers import ApiName, Paper, PaperId, normalise_arxiv, normalise_doi

FIELDS = "title,abstract,year,venue,citationCount,authors,externalIds,openAccessPdf"
BATCH_SIZE = 500  # POST /paper/batch takes at most 500 ids
SEARCH_WINDOW = 1000  # /paper/search: offset + limit <= 1000
PAGE_MAX = 1000  # /references, /citations: limit <= 1000


def paper_from_s2(data: Mapping[str, Any]) -> Paper | None:
    """A :class:`Paper` from one S2 paper object; None when it has no title (nothing to show or match)."""
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        return None
    ext = data.get("externalIds") or {}
    doi = normalise_doi(str(ext["DOI"])) if ext.get("DOI") else None
    arxiv = normalise_arxiv(str(ext["ArXiv"])) if ext.get("ArXiv") else None
    if arxiv is None and doi and doi.startswith("10.48550/arxiv."):
        arxiv = normalise_arxiv(doi.removeprefix("10.48550/arxiv."))
    pdf = data.get("openAccessPdf") or {}
    year = data.get("year")
    count = data.get("citationCount")
    return Paper(
        title=title.strip(),
        abstract=data.get("abstract") or None,
        year=year if isinstance(year, int) else None,
        venue=data.get("venue") or None,
        citation_count=count if isinstance(count, int) else None,
        authors=tuple(a["name"] for a in data.get("authors") or [] if isinstance(a, dict) and a.get("name")),
        doi=doi,
        s2_id=data.get("paperId") or None,
        pmid=str(ext["PubMed"]) if ext.get("PubMed") else None,
        arxiv_id=arxiv,
        pdf_url=(pdf.get("url") or None) if isinstance(pdf, dict) else None,
        sources=("semantic_scholar",),
    )


def _lookup_id(paper: Paper) -> PaperId | None:
    """The id S2 knows ``paper`` by: its S2 id, else DOI, PMID or arXiv id."""
    for pid in (
        PaperId("s2", paper.s2_id) if paper.s2_id else None,
        PaperId("doi", paper.doi) if paper.doi else None,
        PaperId("pmid", paper.pmid) if paper.pmid else None,
        PaperId("arxiv", paper.arxiv_id) if paper.arxiv_id else None,
    ):
        if pid is not None:
            return pid
    return None


class SemanticScholar:
    """Client of the Semantic Scholar Graph API over one :class:`ApiHttp` (retries, rate limit, cache, budget)."""

    name: ApiName = "semantic_scholar"

    def __init__(self, http: ApiHttp, *, page_size: int = 100) -> None:
        self.http = http
        self.page_size = max(1, min(page_size, PAGE_MAX))

    def _shape_error(self, what: str, value: object) -> SourceUnavailable:
        self.http.usage.add("errors")
        return SourceUnavailable(f"{self.name} answered {what} with an unexpected shape: {str(value)[:120]}")

    def search(self, query: str, limit: int = 20) -> list[Paper]:
        """Relevance search, paging with offset/next up to ``limit`` (at most 1,000: the API's window)."""
        papers: list[Paper] = []
        offset = 0
        limit = min(limit, SEARCH_WINDOW)
        while len(papers) < limit and offset < SEARCH_WINDOW:
            size = min(self.page_size, 100, limit - len(papers), SEARCH_WINDOW - offset)
            data = self.http.get(
                "/paper/search", {"query": query, "offset": str(offset), "limit": str(size), "fields": FIELDS}
            )
            if data is None:
                break
            if not isinstance(data, dict) or not isinstance(data.get("data", []), list):
                raise self._shape_error("a search", data)
            papers.extend(p for item in data.get("data") or [] if (p := paper_from_s2(item)))
            if data.get("next") is None:
                break
            offset = int(data["next"])
        return papers[:limit]

    def paper(self, pid: PaperId) -> Paper | None:
        """The paper ``pid`` names, or None when S2 does not know it (404) or cannot look such an id up."""
        if pid.kind == "openalex":
            return None
        data = self.http.get(f"/paper/{quote(pid.s2(), safe=':/()')}", {"fields": FIELDS})
        if data is None:
            return None
        if not isinstance(data, dict):
            raise self._shape_error("a paper lookup", data)
        return paper_from_s2(data)

    def papers(self, ids: Sequence[PaperId]) -> list[Paper | None]:
        """Batch lookup (``POST /paper/batch``, 500 ids a request): one entry per id, same order, None if unknown."""
        out: list[Paper | None] = [None] * len(ids)
        wanted = [(i, pid.s2()) for i, pid in enumerate(ids) if pid.kind != "openalex"]
        for start in range(0, len(wanted), BATCH_SIZE):
            chunk = wanted[start : start + BATCH_SIZE]
            data = self.http.post("/paper/batch", {"fields": FIELDS}, {"ids": [s2 for _, s2 in chunk]})
            if data is None:
                continue
            if not isinstance(data, list) or len(data) != len(chunk):
                raise self._shape_error("a batch lookup", data)
            for (i, _), item in zip(chunk, data, strict=True):
                out[i] = paper_from_s2(item) if isinstance(item, dict) else None
        return out

    def references(self, paper: Paper, limit: int = 100) -> list[Paper]:
        """Papers ``paper`` cites (``citedPaper``), in S2's order, up to ``limit``."""
        return self._neighbours(paper, "references", "citedPaper", limit)

    def citations(self, paper: Paper, limit: int = 100) -> list[Paper]:
        """Papers citing ``paper`` (``citingPaper``), up to ``limit``."""
        return self._neighbours(paper, "citations", "citingPaper", limit)

    def _neighbours(self, paper: Paper, edge: str, key: str, limit: int) -> list[Paper]:
        pid = _lookup_id(paper)
        if pid is None or limit <= 0:
            return []
        path = f"/paper/{quote(pid.s2(), safe=':/()')}/{edge}"
        found: list[Paper] = []
        offset = 0
        while len(found) < limit:
            size = min(self.page_size, limit - len(found))
            data = self.http.get(path, {"fields": FIELDS, "offset": str(offset), "limit": str(size)})
            if data is None:
                break
            if not isinstance(data, dict) or not isinstance(data.get("data", []), list):
                raise self._shape_error(f"a {edge} page", data)
            items = [item.get(key) for item in data.get("data") or [] if isinstance(item, dict)]
            found.extend(p for other in items if isinstance(other, dict) and (p := paper_from_s2(other)))
            if data.get("next") is None:
                break
            offset = int(data["next"])
        return found[:limit]
