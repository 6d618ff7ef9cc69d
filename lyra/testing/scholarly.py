"""A local HTTP server speaking Semantic Scholar's and OpenAlex's shapes from a corpus file: for tests, the offline
demo and the citation benchmark. Real sockets, no mocks.

One server, three prefixes: Semantic Scholar under ``/graph/v1`` (:attr:`ReplayServer.s2_url`), OpenAlex under
``/openalex`` (:attr:`ReplayServer.openalex_url`), Crossref under ``/crossref`` (:attr:`ReplayServer.crossref_url`).
Point Lyra at it with ``LYRA_S2_URL`` / ``LYRA_OPENALEX_URL`` / ``LYRA_CROSSREF_URL``.

Crossref: ``GET /works/{doi}`` (the work with its ``updated-by`` notices: retractions, expressions of concern,
corrections, from the publisher or Retraction Watch; unknown DOI: 404 ``Resource not found.``). OpenAlex works carry
``is_retracted``. :meth:`ReplayServer.set_updates` (or ``POST /_replay/papers/{id}/updates``) changes a paper's
notices while the server runs, so a test can retract a paper between two runs; :meth:`ReplayServer.set_record` (or
``POST /_replay/papers/{id}/record``) changes its record (an abstract, a title) and moves OpenAlex's ``updated_date``,
so a test can revise a paper between two refreshes. Works carry ``updated_date``; Semantic Scholar states no version.

Semantic Scholar: ``GET /paper/search`` (query, offset, limit, fields; ``total``, ``next`` absent on the last page,
offset + limit <= 1000), ``GET /paper/{id}`` (S2 id, ``DOI:``, bare DOI, ``PMID:``, ``ARXIV:``, ``CorpusId:``),
``POST /paper/batch`` (<= 500 ids, ``null`` for unknown), ``GET /paper/{id}/references`` and ``/citations``
(``{"offset", "next"?, "data": [{"citedPaper" | "citingPaper": {...}}]}``; references S2 cannot resolve come with
``paperId: null`` as in the real API). ``fields`` is honoured (``paperId`` always; unknown fields -> 400), 404 bodies
are ``{"error": "Paper with id … not found"}``.

OpenAlex: ``GET /works`` with ``search=``, ``filter=`` (``cites:W…``, ``openalex_id:`` / ``openalex:`` /
``ids.openalex:``, ``doi:``, ``pmid:`` / ``ids.pmid:``; ``|`` is OR, ``,`` is AND), ``page``/``per_page`` (<= 200),
``select`` (root fields); ``GET /works/{W…|doi:…|https://doi.org/…|pmid:…}``. Works carry ``id`` and
``referenced_works`` as ``https://openalex.org/W…`` URLs, ``doi`` as a ``https://doi.org/…`` URL, ``ids``,
``cited_by_count``, ``publication_year``, ``primary_location.source.display_name``,
``authorships[].author.display_name``, ``open_access.oa_url``, ``best_oa_location.pdf_url`` and
``abstract_inverted_index``.

Fault injection (:meth:`ReplayServer.inject`, or ``POST /_replay/faults`` with the same fields as JSON): per API
and/or path prefix, answer a status (404, 429 with ``Retry-After``, 5xx), answer slowly, or send malformed JSON,
for ``times`` requests or for good. Every request is logged with its arrival time (:meth:`ReplayServer.requests`,
``GET /_replay/log``). Run it: ``python -m lyra.testing.scholarly --corpus FILE [--port N]`` or
``--synthetic SEED``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal
from urllib.parse import parse_qs, unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from lyra.sources.scholarly.papers import normalise_arxiv, normalise_doi, normalise_openalex

S2_PREFIX = "/graph/v1"
OPENALEX_PREFIX = "/openalex"
CROSSREF_PREFIX = "/crossref"
ReplayApi = Literal["semantic_scholar", "openalex", "crossref"]
Handle = Callable[[str, str, dict[str, str], str], tuple[int, Any]]
CONTROL_PREFIX = "/_replay"


# --- the corpus -------------------------------------------------------------------------------------------------


class CorpusUpdate(BaseModel):
    """A notice about a paper as Crossref lists it in the paper's ``updated-by``: ``type`` is Crossref's update type
    (retraction, withdrawal, removal, partial_retraction, expression_of_concern, correction, erratum, ...);
    ``source`` ``publisher`` or ``retraction-watch`` (the Retraction Watch records Crossref carries)."""

    model_config = ConfigDict(extra="forbid")

    type: str
    notice_doi: str | None = None
    date: str | None = None  # YYYY-MM-DD
    label: str | None = None
    source: str = "publisher"


RETRACTING_UPDATES = frozenset({"retraction", "withdrawal", "removal"})


class CorpusPaper(BaseModel):
    """One paper of a replay corpus. ``s2_id`` / ``openalex_id`` None: that API does not know the paper.
    ``s2`` / ``openalex``: field overrides for that API's view (e.g. ``{"doi": null}`` where OpenAlex lacks the
    DOI, ``{"abstract": null}``, another ``title``), so the two APIs can disagree as the real ones do."""

    model_config = ConfigDict(extra="forbid")

    id: str
    title: str
    abstract: str | None = None
    year: int | None = None
    venue: str | None = None
    citation_count: int | None = None  # None: counted from the corpus graph
    authors: list[str] = Field(default_factory=list)
    doi: str | None = None
    pmid: str | None = None
    arxiv: str | None = None
    pdf_url: str | None = None
    s2_id: str | None = None
    openalex_id: str | None = None
    references: list[str] = Field(default_factory=list)  # corpus ids this paper cites, in order
    s2: dict[str, Any] = Field(default_factory=dict)
    openalex: dict[str, Any] = Field(default_factory=dict)
    updates: list[CorpusUpdate] = Field(default_factory=list)  # Crossref's updated-by; OpenAlex's is_retracted
    updated_date: str = "2026-01-01T00:00:00.000000"  # OpenAlex's updated_date (set_record moves it on)


class Corpus(BaseModel):
    papers: list[CorpusPaper]

    @classmethod
    def load(cls, path: Path) -> Corpus:
        return cls.model_validate_json(path.read_text(encoding="utf-8"))

    def save(self, path: Path) -> None:
        path.write_text(self.model_dump_json(indent=1, exclude_defaults=True), encoding="utf-8")


def inverted_index(text: str) -> dict[str, list[int]]:
    """OpenAlex's ``abstract_inverted_index`` of ``text`` (whitespace tokens -> positions)."""
    index: dict[str, list[int]] = {}
    for position, word in enumerate(text.split()):
        index.setdefault(word, []).append(position)
    return index


@dataclass
class _View:
    """One API's view of a corpus paper (overrides applied)."""

    paper: CorpusPaper
    title: str
    abstract: str | None
    year: int | None
    venue: str | None
    authors: list[str]
    doi: str | None
    pmid: str | None
    arxiv: str | None
    pdf_url: str | None
    citation_count: int | None


def _view(paper: CorpusPaper, overrides: Mapping[str, Any]) -> _View:
    values = {
        name: overrides.get(name, getattr(paper, name))
        for name in ("title", "abstract", "year", "venue", "authors", "doi", "pmid", "arxiv", "pdf_url")
    }
    return _View(paper=paper, citation_count=overrides.get("citation_count", paper.citation_count), **values)


class _Graph:
    """The corpus indexed for both APIs."""

    def __init__(self, corpus: Corpus) -> None:
        self.papers = {p.id: p for p in corpus.papers}
        self.order = [p.id for p in corpus.papers]
        self.cited_by: dict[str, list[str]] = {p.id: [] for p in corpus.papers}
        for p in corpus.papers:
            for ref in p.references:
                if ref in self.cited_by:
                    self.cited_by[ref].append(p.id)
        self.s2 = {p.id: _view(p, p.s2) for p in corpus.papers if p.s2_id}
        self.oa = {p.id: _view(p, p.openalex) for p in corpus.papers if p.openalex_id}
        self.s2_by: dict[str, str] = {}
        for pid, v in self.s2.items():
            self.s2_by[f"s2:{v.paper.s2_id.lower()}"] = pid  # type: ignore[union-attr]
            self.s2_by[f"corpus:{_corpus_id(v.paper)}"] = pid
            for kind, value in (("doi", v.doi), ("pmid", v.pmid), ("arxiv", v.arxiv)):
                if value:
                    self.s2_by[f"{kind}:{value.lower()}"] = pid
        self.oa_by: dict[str, str] = {}
        for pid, v in self.oa.items():
            self.oa_by[f"openalex:{v.paper.openalex_id.upper()}"] = pid  # type: ignore[union-attr]
            for kind, value in (("doi", v.doi), ("pmid", v.pmid)):
                if value:
                    self.oa_by[f"{kind}:{value.lower()}"] = pid

    def count(self, pid: str, view: _View, known: Mapping[str, _View]) -> int:
        if view.citation_count is not None:
            return view.citation_count
        return sum(1 for citing in self.cited_by[pid] if citing in known)


def _corpus_id(paper: CorpusPaper) -> int:
    return int(hashlib.sha1(paper.id.encode()).hexdigest()[:7], 16)


def _author_id(name: str) -> str:
    return str(int(hashlib.sha1(name.encode()).hexdigest()[:8], 16))


# --- faults and the request log ---------------------------------------------------------------------------------


@dataclass
class Fault:
    """What to do instead of (or before) answering normally. ``api`` None: both APIs; ``path_prefix`` is matched
    against the API-relative path (``/paper/batch``, ``/works``). ``times`` None: every matching request."""

    api: ReplayApi | None = None
    path_prefix: str | None = None
    status: int | None = None  # answer this status instead (with an API-like error body)
    retry_after: float | None = None  # sent as Retry-After (seconds) with ``status``
    delay: float = 0.0  # seconds to wait before answering (slow answers)
    malformed: bool = False  # answer 200 with a broken JSON body
    times: int | None = None

    def matches(self, api: ReplayApi, path: str) -> bool:
        return (self.api is None or self.api == api) and (self.path_prefix is None or path.startswith(self.path_prefix))


@dataclass(frozen=True)
class LoggedRequest:
    time: float  # time.monotonic() at arrival
    api: str  # "semantic_scholar", "openalex", "crossref" or "control"
    method: str
    path: str  # API-relative, unquoted
    query: dict[str, str]
    body: str
    headers: dict[str, str]
    status: int = 0
    fault: bool = False


class _HttpError(Exception):
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(status)
        self.status = status
        self.body = body


# --- the two APIs -----------------------------------------------------------------------------------------------

S2_FIELDS = (
    "paperId",
    "externalIds",
    "corpusId",
    "url",
    "title",
    "abstract",
    "venue",
    "year",
    "referenceCount",
    "citationCount",
    "isOpenAccess",
    "openAccessPdf",
    "authors",
    "publicationDate",
)
OA_FIELDS = (
    "id",
    "doi",
    "ids",
    "title",
    "display_name",
    "publication_year",
    "cited_by_count",
    "authorships",
    "primary_location",
    "open_access",
    "best_oa_location",
    "abstract_inverted_index",
    "referenced_works",
    "referenced_works_count",
    "is_retracted",
    "updated_date",
)


class _S2:
    def __init__(self, graph: _Graph) -> None:
        self.g = graph

    def _fields(self, query: Mapping[str, str]) -> list[str]:
        raw = query.get("fields")
        fields = [f.strip() for f in raw.split(",") if f.strip()] if raw else ["title"]
        unknown = [f for f in fields if f not in S2_FIELDS]
        if unknown:
            raise _HttpError(400, {"error": f"Unrecognized or unsupported fields: [{', '.join(unknown)}]"})
        return fields

    def paper_json(self, pid: str, fields: list[str]) -> dict[str, Any]:
        v = self.g.s2[pid]
        s2_id = v.paper.s2_id
        ext: dict[str, Any] = {}
        if v.arxiv:
            ext["ArXiv"] = v.arxiv
        if v.doi:
            ext["DOI"] = v.doi
        if v.pmid:
            ext["PubMed"] = v.pmid
        ext["CorpusId"] = _corpus_id(v.paper)
        full: dict[str, Any] = {
            "paperId": s2_id,
            "externalIds": ext,
            "corpusId": _corpus_id(v.paper),
            "url": f"https://www.semanticscholar.org/paper/{s2_id}",
            "title": v.title,
            "abstract": v.abstract,
            "venue": v.venue or "",
            "year": v.year,
            "referenceCount": len(v.paper.references),
            "citationCount": self.g.count(pid, v, self.g.s2),
            "isOpenAccess": bool(v.pdf_url),
            "openAccessPdf": {"url": v.pdf_url, "status": "GREEN"} if v.pdf_url else None,
            "authors": [{"authorId": _author_id(a), "name": a} for a in v.authors],
            "publicationDate": f"{v.year}-01-01" if v.year else None,
        }
        return {"paperId": s2_id, **{f: full[f] for f in fields}}

    def _unresolved(self, pid: str, fields: list[str]) -> dict[str, Any]:
        # A reference Semantic Scholar could not match to a paper: no id, a title, nothing else.
        paper = self.g.papers[pid]
        empty: dict[str, Any] = {"authors": [], "externalIds": None, "venue": "", "isOpenAccess": False}
        return {"paperId": None, **{f: paper.title if f == "title" else empty.get(f) for f in fields}}

    def resolve(self, raw_id: str) -> str | None:
        value = raw_id.strip()
        prefix, sep, rest = value.partition(":")
        kind = prefix.lower() if sep else ""
        if kind == "doi":
            doi = normalise_doi(rest)
            return self.g.s2_by.get(f"doi:{doi}") if doi else None
        if kind == "pmid":
            return self.g.s2_by.get(f"pmid:{rest.strip()}")
        if kind == "arxiv":
            arxiv = normalise_arxiv(rest)
            return self.g.s2_by.get(f"arxiv:{arxiv.lower()}") if arxiv else None
        if kind == "corpusid":
            return self.g.s2_by.get(f"corpus:{rest.strip()}")
        if value.startswith("10."):
            doi = normalise_doi(value)
            return self.g.s2_by.get(f"doi:{doi}") if doi else None
        return self.g.s2_by.get(f"s2:{value.lower()}")

    def handle(self, method: str, path: str, query: dict[str, str], body: str) -> tuple[int, Any]:
        if method == "POST" and path == "/paper/batch":
            return self.batch(query, body)
        if method != "GET" or not path.startswith("/paper/"):
            raise _HttpError(404, {"message": "Not Found"})
        if path == "/paper/search":
            return self.search(query)
        rest = path.removeprefix("/paper/")
        for edge in ("references", "citations"):
            if rest.endswith(f"/{edge}"):
                return self.edges(rest.removesuffix(f"/{edge}"), edge, query)
        fields = self._fields(query)
        pid = self.resolve(rest)
        if pid is None:
            raise _HttpError(404, {"error": f"Paper with id {rest} not found"})
        return 200, self.paper_json(pid, fields)

    def search(self, query: Mapping[str, str]) -> tuple[int, Any]:
        fields = self._fields(query)
        offset, limit = _int(query, "offset", 0), _int(query, "limit", 10)
        if limit > 100 or limit < 1 or offset < 0:
            raise _HttpError(400, {"error": "limit must be between 1 and 100, offset >= 0"})
        if offset + limit > 1000:
            raise _HttpError(400, {"error": "offset + limit must be < 1000"})
        hits = _search(query.get("query", ""), self.g.s2)
        page = hits[offset : offset + limit]
        out: dict[str, Any] = {"total": len(hits), "offset": offset}
        if offset + limit < min(len(hits), 1000):
            out["next"] = offset + limit
        out["data"] = [self.paper_json(pid, fields) for pid in page]
        return 200, out

    def batch(self, query: Mapping[str, str], body: str) -> tuple[int, Any]:
        fields = self._fields(query)
        try:
            ids = json.loads(body)["ids"]
        except (ValueError, KeyError, TypeError) as exc:
            raise _HttpError(400, {"error": "Body must be a JSON object with an 'ids' list"}) from exc
        if not isinstance(ids, list) or len(ids) > 500:
            raise _HttpError(400, {"error": "Max batch size is 500 ids"})
        out: list[Any] = []
        for raw in ids:
            pid = self.resolve(str(raw))
            out.append(self.paper_json(pid, fields) if pid else None)
        return 200, out

    def edges(self, raw_id: str, edge: str, query: Mapping[str, str]) -> tuple[int, Any]:
        fields = self._fields(query)
        pid = self.resolve(raw_id)
        if pid is None:
            raise _HttpError(404, {"error": f"Paper with id {raw_id} not found"})
        offset, limit = _int(query, "offset", 0), _int(query, "limit", 100)
        if limit > 1000 or limit < 1 or offset < 0:
            raise _HttpError(400, {"error": "limit must be between 1 and 1000"})
        if edge == "references":
            others = [r for r in self.g.papers[pid].references if r in self.g.papers]
            key = "citedPaper"
        else:
            others = [c for c in self.g.cited_by[pid] if c in self.g.s2]
            key = "citingPaper"
        page = others[offset : offset + limit]
        out: dict[str, Any] = {"offset": offset}
        if offset + limit < len(others):
            out["next"] = offset + limit
        out["data"] = [
            {key: self.paper_json(o, fields) if o in self.g.s2 else self._unresolved(o, fields)} for o in page
        ]
        return 200, out


class _OpenAlex:
    def __init__(self, graph: _Graph) -> None:
        self.g = graph

    def work_json(self, pid: str, select: list[str] | None) -> dict[str, Any]:
        v = self.g.oa[pid]
        url = f"https://openalex.org/{v.paper.openalex_id}"
        doi_url = f"https://doi.org/{v.doi}" if v.doi else None
        ids: dict[str, Any] = {"openalex": url}
        if doi_url:
            ids["doi"] = doi_url
        if v.pmid:
            ids["pmid"] = f"https://pubmed.ncbi.nlm.nih.gov/{v.pmid}"
        refs = [
            f"https://openalex.org/{self.g.papers[r].openalex_id}"
            for r in v.paper.references
            if r in self.g.oa and self.g.papers[r].openalex_id
        ]
        last = len(v.authors) - 1
        full: dict[str, Any] = {
            "id": url,
            "doi": doi_url,
            "title": v.title,
            "display_name": v.title,
            "publication_year": v.year,
            "ids": ids,
            "cited_by_count": self.g.count(pid, v, self.g.oa),
            "authorships": [
                {
                    "author_position": "first" if i == 0 else "last" if i == last else "middle",
                    "author": {"id": f"https://openalex.org/A{_author_id(a)}", "display_name": a, "orcid": None},
                    "institutions": [],
                }
                for i, a in enumerate(v.authors)
            ],
            "primary_location": {
                "is_oa": bool(v.pdf_url),
                "landing_page_url": doi_url,
                "pdf_url": v.pdf_url,
                "source": {"display_name": v.venue, "type": "journal"} if v.venue else None,
            },
            "open_access": {
                "is_oa": bool(v.pdf_url),
                "oa_status": "green" if v.pdf_url else "closed",
                "oa_url": v.pdf_url,
            },
            "best_oa_location": {"pdf_url": v.pdf_url, "is_oa": True} if v.pdf_url else None,
            "abstract_inverted_index": inverted_index(v.abstract) if v.abstract else None,
            "referenced_works": refs,
            "referenced_works_count": len(refs),
            "is_retracted": any(u.type in RETRACTING_UPDATES for u in v.paper.updates),
            "updated_date": v.paper.updated_date,
        }
        if select is None:
            return full
        return {f: full[f] for f in select}

    @staticmethod
    def _select(query: Mapping[str, str]) -> list[str] | None:
        raw = query.get("select")
        if not raw:
            return None
        fields = [f.strip() for f in raw.split(",") if f.strip()]
        for f in fields:
            if f not in OA_FIELDS:
                raise _HttpError(
                    400,
                    {"error": "Invalid query parameters error.", "message": f"{f} is not a valid select field."},
                )
        return fields

    def resolve(self, raw_id: str) -> str | None:
        value = raw_id.strip()
        if openalex := normalise_openalex(value):
            return self.g.oa_by.get(f"openalex:{openalex}")
        lower = value.lower()
        if lower.startswith("pmid:") or "pubmed.ncbi.nlm.nih.gov/" in lower:
            return self.g.oa_by.get(f"pmid:{re.sub(r'[^0-9]', '', lower.rsplit('/', 1)[-1].rsplit(':', 1)[-1])}")
        doi = normalise_doi(value)
        return self.g.oa_by.get(f"doi:{doi}") if doi else None

    def handle(self, method: str, path: str, query: dict[str, str], body: str) -> tuple[int, Any]:
        if method != "GET":
            raise _HttpError(405, {"error": "Method not allowed"})
        if path == "/works":
            return self.works(query)
        if path.startswith("/works/"):
            raw = path.removeprefix("/works/")
            select = self._select(query)
            pid = self.resolve(raw)
            if pid is None:
                raise _HttpError(404, {"error": "Not Found", "message": f"No work found for {raw}"})
            return 200, self.work_json(pid, select)
        raise _HttpError(404, {"error": "Not Found", "message": f"{path} is not a known route"})

    def _filter(self, spec: str) -> set[str]:
        keep = set(self.g.oa)
        for clause in spec.split(","):
            name, sep, values = clause.partition(":")
            if not sep:
                raise _HttpError(400, {"error": "Invalid query parameters error.", "message": f"bad filter {clause}"})
            name = name.strip().lower()
            options = [v for v in values.split("|") if v]
            if name == "cites":
                wanted = {self.resolve(v) for v in options}
                keep &= {pid for pid in self.g.oa if any(r in wanted for r in self.g.papers[pid].references)}
            elif name in ("openalex_id", "openalex", "ids.openalex", "doi", "pmid", "ids.pmid"):
                if len(options) > 100:
                    raise _HttpError(400, {"error": "Invalid query parameters error.", "message": "too many ORs"})
                prefix = "pmid:" if "pmid" in name else ""
                keep &= {pid for v in options if (pid := self.resolve(prefix + v))}
            else:
                raise _HttpError(
                    400, {"error": "Invalid query parameters error.", "message": f"{name} is not a valid field"}
                )
        return keep

    def works(self, query: Mapping[str, str]) -> tuple[int, Any]:
        select = self._select(query)
        page, per_page = _int(query, "page", 1), _int(query, "per_page", _int(query, "per-page", 25))
        if per_page < 1 or per_page > 200 or page < 1:
            raise _HttpError(
                400, {"error": "Invalid query parameters error.", "message": "per_page is between 1 and 200"}
            )
        if "search" in query:
            hits = _search(query["search"], self.g.oa)
        else:
            hits = [pid for pid in self.g.order if pid in self.g.oa]
        if "filter" in query:
            keep = self._filter(query["filter"])
            hits = [pid for pid in hits if pid in keep]
        chunk = hits[(page - 1) * per_page : page * per_page]
        meta = {"count": len(hits), "db_response_time_ms": 1, "page": page, "per_page": per_page, "groups_count": None}
        return 200, {"meta": meta, "results": [self.work_json(pid, select) for pid in chunk], "group_by": []}


def _int(query: Mapping[str, str], name: str, default: int) -> int:
    try:
        return int(query.get(name, default))
    except ValueError as exc:
        raise _HttpError(400, {"error": f"{name} must be an integer"}) from exc


def _search(text: str, known: Mapping[str, _View]) -> list[str]:
    """Corpus ids matching any query word, best first (title words count double), corpus order on ties."""
    words = set(re.findall(r"[a-z0-9]+", text.lower()))
    scored: list[tuple[int, int, str]] = []
    for position, (pid, view) in enumerate(known.items()):
        title = re.findall(r"[a-z0-9]+", view.title.lower())
        abstract = re.findall(r"[a-z0-9]+", (view.abstract or "").lower())
        score = 2 * sum(1 for w in title if w in words) + sum(1 for w in abstract if w in words)
        if score:
            scored.append((-score, position, pid))
    return [pid for _, _, pid in sorted(scored)]


# --- the server -------------------------------------------------------------------------------------------------


def _date_parts(date: str | None) -> dict[str, Any] | None:
    if not date:
        return None
    return {"date-parts": [[int(part) for part in date.split("-")]]}


class _Crossref:
    """Crossref's ``GET /works/{doi}``: ``{"status": "ok", "message-type": "work", "message": {...}}`` with the
    paper's ``updated-by`` notices; an unknown DOI is a 404 with a plain-text body, as the real API answers."""

    def __init__(self, graph: _Graph) -> None:
        self.g = graph
        self.by_doi = {p.doi.lower(): p.id for p in graph.papers.values() if p.doi}

    def work_json(self, paper: CorpusPaper) -> dict[str, Any]:
        message: dict[str, Any] = {
            "DOI": paper.doi,
            "type": "journal-article",
            "title": [paper.title],
            "container-title": [paper.venue] if paper.venue else [],
            "published": _date_parts(str(paper.year)) if paper.year else None,
            "URL": f"https://doi.org/{paper.doi}",
        }
        if paper.updates:
            message["updated-by"] = [
                {
                    "DOI": u.notice_doi,
                    "type": u.type,
                    "label": u.label or u.type.replace("_", " ").capitalize(),
                    "source": u.source,
                    "updated": _date_parts(u.date),
                }
                for u in paper.updates
            ]
        return {"status": "ok", "message-type": "work", "message-version": "1.0.0", "message": message}

    def handle(self, method: str, path: str, query: dict[str, str], body: str) -> tuple[int, Any]:
        if method != "GET":
            raise _HttpError(405, {"status": "error", "message": "Method not allowed"})
        if not path.startswith("/works/"):
            raise _HttpError(404, {"status": "error", "message": f"{path} is not a known route"})
        doi = normalise_doi(path.removeprefix("/works/"))
        pid = self.by_doi.get(doi.lower()) if doi else None
        if pid is None:
            return 404, b"Resource not found."
        return 200, self.work_json(self.g.papers[pid])


class _State:
    def __init__(self, corpus: Corpus) -> None:
        graph = _Graph(corpus.model_copy(deep=True))  # set_updates changes this copy, never the caller's corpus
        self.graph = graph
        self.s2 = _S2(graph)
        self.openalex = _OpenAlex(graph)
        self.crossref = _Crossref(graph)
        self.lock = threading.Lock()
        self.faults: list[Fault] = []
        self.log: list[LoggedRequest] = []

    def take_fault(self, api: ReplayApi, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.matches(api, path) and (fault.times is None or fault.times > 0):
                    if fault.times is not None:
                        fault.times -= 1
                    return fault
        return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms delayed-ACK stall
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log replaces stderr lines

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        arrived = time.monotonic()
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        parts = urlsplit(self.path)
        raw_path = unquote(parts.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        api: str
        if raw_path.startswith(S2_PREFIX + "/"):
            api, path = "semantic_scholar", raw_path.removeprefix(S2_PREFIX)
        elif raw_path.startswith(OPENALEX_PREFIX + "/"):
            api, path = "openalex", raw_path.removeprefix(OPENALEX_PREFIX)
        elif raw_path.startswith(CROSSREF_PREFIX + "/"):
            api, path = "crossref", raw_path.removeprefix(CROSSREF_PREFIX)
        elif raw_path.startswith(CONTROL_PREFIX + "/"):
            api, path = "control", raw_path.removeprefix(CONTROL_PREFIX)
        else:
            api, path = "unknown", raw_path
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, payload, extra, fault = self._answer(api, method, path, query, body)
        with state.lock:
            state.log.append(LoggedRequest(arrived, api, method, path, query, body, headers, status, fault))
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeouts in tests)
            self.close_connection = True

    def _answer(
        self, api: str, method: str, path: str, query: dict[str, str], body: str
    ) -> tuple[int, Any, dict[str, str], bool]:
        state = self.server.state
        if api == "control":
            return (*self._control(method, path, body), {}, False)
        if api not in ("semantic_scholar", "openalex", "crossref"):
            return 404, {"error": "Not Found"}, {}, False
        fault = state.take_fault(api, path)  # type: ignore[arg-type]
        if fault is not None:
            if fault.delay:
                time.sleep(fault.delay)
            if fault.status is not None:
                extra = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
                message = "Too Many Requests" if fault.status == 429 else f"injected {fault.status}"
                if fault.status == 404 and api == "semantic_scholar":
                    return 404, {"error": f"Paper with id {path} not found"}, extra, True
                return fault.status, {"message": message}, extra, True
            if fault.malformed:
                return 200, b'{"data": [{"paperId": "trunc', {}, True
        try:
            handlers: dict[str, Handle] = {
                "semantic_scholar": state.s2.handle,
                "openalex": state.openalex.handle,
                "crossref": state.crossref.handle,
            }
            status, payload = handlers[api](method, path, query, body)
            return status, payload, {}, fault is not None
        except _HttpError as exc:
            return exc.status, exc.body, {}, fault is not None

    def _control(self, method: str, path: str, body: str) -> tuple[int, Any]:
        server = self.server
        if path == "/faults" and method == "POST":
            server.owner.inject(Fault(**json.loads(body or "{}")))
            return 200, {"faults": len(server.state.faults)}
        if path == "/faults" and method == "DELETE":
            server.owner.clear_faults()
            return 200, {"faults": 0}
        if path.startswith("/papers/") and path.endswith("/updates") and method == "POST":
            paper_id = path.removeprefix("/papers/").removesuffix("/updates")
            updates = [CorpusUpdate.model_validate(u) for u in json.loads(body or "[]")]
            try:
                server.owner.set_updates(paper_id, updates)
            except KeyError as exc:
                return 404, {"error": str(exc)}
            return 200, {"paper": paper_id, "updates": len(updates)}
        if path.startswith("/papers/") and path.endswith("/record") and method == "POST":
            paper_id = path.removeprefix("/papers/").removesuffix("/record")
            record = json.loads(body or "{}")
            if not isinstance(record, dict) or not isinstance(record.get("updated_date"), str):
                return 422, {"error": "a JSON object with updated_date (a string) and the fields to change"}
            try:
                server.owner.set_record(paper_id, **record)
            except KeyError as exc:
                return 404, {"error": str(exc)}
            except ValueError as exc:
                return 422, {"error": str(exc)}
            return 200, {"paper": paper_id, "updated_date": record["updated_date"]}
        if path == "/log" and method == "GET":
            return 200, [asdict(r) for r in server.owner.requests()]
        if path == "/log" and method == "DELETE":
            server.owner.clear_log()
            return 200, {"log": 0}
        return 404, {"error": "Not Found"}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State
    owner: ReplayServer


class ReplayServer:
    """The replay server on 127.0.0.1 (``port`` 0: any free port), started by ``start()`` or ``with``."""

    def __init__(self, corpus: Corpus, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._state = _State(corpus)
        self._httpd = _Server((host, port), _Handler)
        self._httpd.state = self._state
        self._httpd.owner = self
        self._thread: threading.Thread | None = None
        address = self._httpd.server_address
        self.host = address[0] if isinstance(address[0], str) else address[0].decode()
        self.port = int(address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def s2_url(self) -> str:
        return self.base_url + S2_PREFIX

    @property
    def openalex_url(self) -> str:
        return self.base_url + OPENALEX_PREFIX

    @property
    def crossref_url(self) -> str:
        return self.base_url + CROSSREF_PREFIX

    def settings_overrides(self) -> dict[str, str]:
        """``s2_url``, ``openalex_url`` and ``crossref_url`` for :func:`lyra.core.settings.load_settings`."""
        return {"s2_url": self.s2_url, "openalex_url": self.openalex_url, "crossref_url": self.crossref_url}

    def set_updates(self, paper_id: str, updates: list[CorpusUpdate]) -> None:
        """Change the world: the paper's notices (a retraction, an expression of concern, a correction) from now on,
        in Crossref's ``updated-by`` and OpenAlex's ``is_retracted`` (or ``POST /_replay/papers/{id}/updates``)."""
        with self._state.lock:
            paper = self._state.graph.papers.get(paper_id)
            if paper is None:
                raise KeyError(f"no paper {paper_id!r} in the replay corpus")
            paper.updates = list(updates)

    def set_record(self, paper_id: str, *, updated_date: str, **fields: Any) -> None:
        """Change the world: the paper's record from now on, in both APIs' views (``fields``: ``title``,
        ``abstract``, ``year``, ``venue``, ...; nothing: only its version moves), with OpenAlex's ``updated_date``
        moved to ``updated_date`` (or ``POST /_replay/papers/{id}/record`` with ``{"updated_date": ..., ...}``)."""
        with self._state.lock:
            graph = self._state.graph
            paper = graph.papers.get(paper_id)
            if paper is None:
                raise KeyError(f"no paper {paper_id!r} in the replay corpus")
            changed = paper.model_validate({**paper.model_dump(), **fields, "updated_date": updated_date})
            for name in {*fields, "updated_date"}:
                setattr(paper, name, getattr(changed, name))
            if paper_id in graph.s2:
                graph.s2[paper_id] = _view(paper, paper.s2)
            if paper_id in graph.oa:
                graph.oa[paper_id] = _view(paper, paper.openalex)

    def start(self) -> ReplayServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scholarly-replay", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # faults
    def inject(self, fault: Fault | None = None, **fields: Any) -> Fault:
        """Add a fault (a :class:`Fault`, or its fields as keywords); the first matching fault applies."""
        fault = fault or Fault(**fields)
        with self._state.lock:
            self._state.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._state.lock:
            self._state.faults.clear()

    # the request log
    def requests(self, api: ReplayApi | None = None, path_prefix: str | None = None) -> list[LoggedRequest]:
        with self._state.lock:
            log = list(self._state.log)
        return [
            r
            for r in log
            if r.api != "control"
            and (api is None or r.api == api)
            and (path_prefix is None or r.path.startswith(path_prefix))
        ]

    def clear_log(self) -> None:
        with self._state.lock:
            self._state.log.clear()


# --- a synthetic corpus -----------------------------------------------------------------------------------------

_TOPICS: dict[str, tuple[list[str], list[str]]] = {
    # topic: (subject phrases, outcome phrases)
    "sleep": (
        ["sleep deprivation", "short sleep duration", "insomnia", "late chronotype", "shift work"],
        ["working memory", "glucose tolerance", "mood", "reaction time", "memory consolidation"],
    ),
    "exercise": (
        ["aerobic exercise", "resistance training", "high-intensity interval training", "daily walking"],
        ["blood pressure", "depressive symptoms", "insulin sensitivity", "bone density", "cognitive decline"],
    ),
    "diet": (
        ["intermittent fasting", "a Mediterranean diet", "ultra-processed food", "dietary fibre", "sugar intake"],
        ["body weight", "LDL cholesterol", "gut microbiome diversity", "HbA1c", "systemic inflammation"],
    ),
    "vitamin": (
        ["vitamin D supplementation", "omega-3 supplementation", "folate supplementation", "iron supplementation"],
        ["fracture risk", "respiratory infections", "cardiovascular events", "fatigue", "all-cause mortality"],
    ),
    "screens": (
        ["screen time", "social media use", "smartphone use at night", "video gaming"],
        ["adolescent anxiety", "sleep quality", "attention problems", "academic performance", "self-esteem"],
    ),
    "coffee": (
        ["coffee consumption", "caffeine intake", "green tea consumption", "energy drinks"],
        ["type 2 diabetes", "atrial fibrillation", "liver fibrosis", "Parkinson's disease", "headache"],
    ),
}
_DESIGNS = [
    "a randomised controlled trial of {n} adults",
    "a prospective cohort of {n} participants followed for {y} years",
    "a cross-sectional survey of {n} respondents",
    "a meta-analysis of {k} studies ({n} participants)",
    "a crossover trial in {n} healthy volunteers",
]
_FINDINGS = {
    "supports": [
        "{s} was associated with worse {o} (OR {r}).",
        "{s} significantly impaired {o} compared with controls.",
        "We found that {s} increased the risk of poor {o}.",
    ],
    "contradicts": [
        "{s} had no significant effect on {o} (difference {r}, 95% CI crossing zero).",
        "Contrary to earlier reports, {s} did not change {o}.",
        "We found no association between {s} and {o} after adjustment.",
    ],
    "unrelated": [
        "We describe the recruitment procedures and baseline characteristics.",
        "The protocol and statistical analysis plan are reported.",
        "Measurement reliability of the questionnaire was high.",
    ],
}
_FIRST = ["Anna", "Ben", "Chen", "Daria", "Emeka", "Farah", "Goran", "Hiro", "Ines", "Jonas", "Kofi", "Lena", "Mei"]
_LAST = ["Okafor", "Schmidt", "Tanaka", "Rossi", "Novak", "Haddad", "Larsen", "Moreau", "Silva", "Kowalski", "Ito"]
_VENUES = ["Sleep Medicine", "BMJ Open", "PLOS ONE", "Nutrients", "Lancet Public Health", "JAMA Pediatrics", None]


def synthetic_corpus(sources: int = 10, candidates_per_source: int = 100, seed: int = 0) -> Corpus:
    """A seeded corpus for the citation benchmark: ``sources`` source papers (ids ``src-<i>``, in both APIs, with
    DOIs and abstracts), each with ``candidates_per_source`` neighbours (ids ``src-<i>-c<j>``): the first half cited
    by the source (references), the rest citing it. Candidates vary like real records: abstracts that support,
    contradict or ignore the source's claim, ~12% without an abstract (and ~5% missing it only in S2), ~15% without a
    DOI, ~10% only in S2 and ~10% only in OpenAlex, ~10% whose OpenAlex record lacks the DOI (matched by title +
    first author + year), some PMIDs, arXiv ids and PDF links. Different ids in each API, as in reality."""
    rng = random.Random(seed)
    topics = list(_TOPICS)
    papers: list[CorpusPaper] = []

    def ids(key: str) -> tuple[str, str]:
        digest = hashlib.sha1(f"{seed}:{key}".encode()).hexdigest()
        return digest, f"W{int(digest[:12], 16) % 10**10 + 10**9}"

    def authors() -> list[str]:
        return [f"{rng.choice(_FIRST)} {rng.choice(_LAST)}" for _ in range(rng.randint(1, 5))]

    def abstract(subject: str, outcome: str, stance: str) -> str:
        design = rng.choice(_DESIGNS).format(n=rng.randint(40, 90_000), y=rng.randint(1, 20), k=rng.randint(5, 60))
        finding = rng.choice(_FINDINGS[stance]).format(s=subject, o=outcome, r=f"{rng.uniform(0.5, 2.5):.2f}")
        background = f"Whether {subject} affects {outcome} is debated."
        return f"{background} We report {design}. {finding} Implications for {outcome} are discussed."

    for i in range(sources):
        topic = topics[i % len(topics)]
        subjects, outcomes = _TOPICS[topic]
        subject, outcome = rng.choice(subjects), rng.choice(outcomes)
        src_id = f"src-{i}"
        s2_id, oa_id = ids(src_id)
        src_year = rng.randint(2012, 2020)
        source = CorpusPaper(
            id=src_id,
            title=f"{subject.capitalize()} and {outcome}: {rng.choice(['a cohort study', 'a randomised trial'])}",
            abstract=abstract(subject, outcome, "supports"),
            year=src_year,
            venue=rng.choice([v for v in _VENUES if v]),
            citation_count=rng.randint(50, 900),
            authors=authors(),
            doi=f"10.{rng.randint(1000, 9999)}/src.{seed}.{i}",
            pmid=str(rng.randint(20_000_000, 39_000_000)),
            s2_id=s2_id,
            openalex_id=oa_id,
        )
        papers.append(source)
        half = candidates_per_source // 2
        for j in range(candidates_per_source):
            cid = f"{src_id}-c{j}"
            c_s2, c_oa = ids(cid)
            other_subject = rng.choice(subjects) if rng.random() < 0.7 else rng.choice(_TOPICS[rng.choice(topics)][0])
            other_outcome = rng.choice(outcomes) if rng.random() < 0.7 else rng.choice(_TOPICS[rng.choice(topics)][1])
            stance = rng.choices(["supports", "contradicts", "unrelated"], weights=[5, 3, 2])[0]
            roll = rng.random()
            in_s2 = roll >= 0.10  # below: OpenAlex only
            in_oa = not 0.10 <= roll < 0.20  # here: S2 only
            has_doi = rng.random() >= 0.15
            year = src_year + rng.randint(1, 6) if j >= half else src_year - rng.randint(0, 15)
            candidate = CorpusPaper(
                id=cid,
                title=f"{other_subject.capitalize()} and {other_outcome}"
                + rng.choice([" in older adults", " in adolescents", ": a systematic review", " among workers", ""])
                + f" ({j})",
                abstract=None if rng.random() < 0.12 else abstract(other_subject, other_outcome, stance),
                year=year,
                venue=rng.choice(_VENUES),
                citation_count=int(rng.paretovariate(1.2) * 5),
                authors=authors(),
                doi=f"10.{rng.randint(1000, 9999)}/c.{seed}.{i}.{j}" if has_doi else None,
                pmid=str(rng.randint(20_000_000, 39_000_000)) if rng.random() < 0.3 else None,
                arxiv=f"{rng.randint(15, 24):02d}{rng.randint(1, 12):02d}.{rng.randint(10000, 99999)}"
                if rng.random() < 0.1
                else None,
                pdf_url=f"https://example.org/pdf/{cid}.pdf" if rng.random() < 0.4 else None,
                s2_id=c_s2 if in_s2 else None,
                openalex_id=c_oa if in_oa else None,
                references=[src_id] if j >= half else [],
            )
            overrides: dict[str, Any] = {}
            if has_doi and in_s2 and in_oa and rng.random() < 0.10:
                overrides["doi"] = None  # OpenAlex lacks the DOI: only title + author + year can match it
            candidate.openalex.update(overrides)
            if candidate.abstract and in_s2 and in_oa and rng.random() < 0.05:
                candidate.s2["abstract"] = None  # S2 lacks the abstract OpenAlex has
            papers.append(candidate)
            if j < half:
                source.references.append(cid)
    return Corpus(papers=papers)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m lyra.testing.scholarly",
        description="Serve Semantic Scholar (/graph/v1) and OpenAlex (/openalex) answers from a corpus on 127.0.0.1. "
        "Faults: POST /_replay/faults with a Fault as JSON; DELETE /_replay/faults; the request log: GET /_replay/log.",
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--corpus", type=Path, help="a corpus JSON file ({'papers': [...]})")
    group.add_argument("--synthetic", type=int, metavar="SEED", help="serve synthetic_corpus(seed=SEED)")
    parser.add_argument("--sources", type=int, default=10, help="with --synthetic: source papers")
    parser.add_argument("--candidates", type=int, default=100, help="with --synthetic: neighbours per source")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    corpus = (
        Corpus.load(args.corpus)
        if args.corpus
        else synthetic_corpus(sources=args.sources, candidates_per_source=args.candidates, seed=args.synthetic)
    )
    server = ReplayServer(corpus, host=args.host, port=args.port)
    print(f"LYRA_S2_URL={server.s2_url}", flush=True)
    print(f"LYRA_OPENALEX_URL={server.openalex_url}", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()


if __name__ == "__main__":
    main()
