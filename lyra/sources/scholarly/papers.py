"""Papers and their identifiers, shared by the Semantic Scholar and OpenAlex clients.

Identifier normal forms (what :class:`PaperId.value` and the :class:`Paper` id fields hold):

- ``doi``: lower-case, without ``https://doi.org/``, ``doi:`` or URL escapes (``10.1093/mind/lix.236.433``);
- ``pmid``: the digits (``31978945``);
- ``arxiv``: the id **without its version** (``2101.00001``, old style ``hep-th/9901001``): a version names a
  revision of the same paper, and both APIs index the paper, not the revision;
- ``s2``: the 40-hex Semantic Scholar paper id, lower-case;
- ``openalex``: ``W`` followed by digits (``W2741809807``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict

ApiName = Literal["semantic_scholar", "openalex"]
IdKind = Literal["doi", "pmid", "arxiv", "s2", "openalex"]
API_ORDER: tuple[ApiName, ...] = ("semantic_scholar", "openalex")


@dataclass(frozen=True)
class PaperId:
    """One identifier of a paper, normalised (see the module docstring)."""

    kind: IdKind
    value: str

    def s2(self) -> str:
        """The id as Semantic Scholar's ``/paper/{id}`` expects it. OpenAlex ids have no S2 form (ValueError)."""
        if self.kind == "doi":
            return f"DOI:{self.value}"
        if self.kind == "pmid":
            return f"PMID:{self.value}"
        if self.kind == "arxiv":
            return f"ARXIV:{self.value}"
        if self.kind == "s2":
            return self.value
        raise ValueError(f"Semantic Scholar cannot look up an OpenAlex id ({self.value})")

    def openalex(self) -> str | None:
        """The id as OpenAlex's ``/works/{id}`` expects it, or None when OpenAlex cannot look it up (S2 ids).

        arXiv papers are reached through their DataCite DOI ``10.48550/arxiv.<id>``, which OpenAlex indexes."""
        if self.kind == "doi":
            return f"doi:{self.value}"
        if self.kind == "pmid":
            return f"pmid:{self.value}"
        if self.kind == "arxiv":
            return f"doi:{arxiv_doi(self.value)}"
        if self.kind == "openalex":
            return self.value
        return None

    def __str__(self) -> str:
        return f"{self.kind}:{self.value}"


def arxiv_doi(arxiv_id: str) -> str:
    """The DataCite DOI arXiv registers for a paper (normalised, lower-case)."""
    return f"10.48550/arxiv.{arxiv_id}".lower()


# --- normalisers ------------------------------------------------------------------------------------------------

_DOI_PREFIXES = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*|urn:doi:)", re.IGNORECASE)
_DOI_TRAILING = ".,;:!?'\"]}>"


def normalise_doi(text: str) -> str | None:
    """``10.x/y`` from a DOI in any common spelling (URL, ``doi:`` prefix, escapes, trailing punctuation)."""
    value = unquote(text.strip())
    value = _DOI_PREFIXES.sub("", value).strip()
    value = _strip_doi_tail(value)
    if not re.fullmatch(r"10\.\d+(?:\.\d+)*/\S+", value):
        return None
    return value.lower()


def _strip_doi_tail(value: str) -> str:
    while value:
        last = value[-1]
        if last in _DOI_TRAILING or (last == ")" and value.count("(") < value.count(")")):
            value = value[:-1]
        else:
            break
    return value


_ARXIV_NEW = r"\d{4}\.\d{4,5}"
_ARXIV_OLD = r"[a-z][a-z\-]+(?:\.[A-Z]{2})?/\d{7}"
_ARXIV_ID = re.compile(rf"^(?P<id>{_ARXIV_NEW}|{_ARXIV_OLD})(?:v\d+)?$", re.IGNORECASE)


def normalise_arxiv(text: str) -> str | None:
    value = re.sub(r"^(?:arxiv:\s*|https?://(?:www\.)?arxiv\.org/(?:abs|pdf)/)", "", text.strip(), flags=re.I)
    value = value.removesuffix(".pdf")
    match = _ARXIV_ID.match(value)
    if match is None:
        return None
    found = match.group("id")
    if "/" in found:  # old style: the archive is lower-case, its subject class (math.GT) upper-case
        archive, _, number = found.partition("/")
        head, dot, subject = archive.partition(".")
        found = f"{head.lower()}{dot}{subject.upper()}/{number}"
    return found


def normalise_openalex(text: str) -> str | None:
    match = re.fullmatch(r"(?:https?://(?:api\.)?openalex\.org/(?:works/)?|openalex:)?([Ww]\d+)", text.strip())
    return match.group(1).upper() if match else None


def normalise_title(title: str) -> str:
    """Lower-case ASCII words of a title, for matching the same paper across APIs."""
    folded = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii").lower()
    return " ".join(re.findall(r"[a-z0-9]+", folded))


def surname(author: str) -> str:
    """The (lower-case, ASCII) last word of an author's name: ``"A. M. Turing"`` -> ``"turing"``."""
    words = normalise_title(author).split()
    return words[-1] if words else ""


# --- parsing user input and free text ---------------------------------------------------------------------------

_S2_ID = re.compile(r"^(?:https?://(?:www\.)?semanticscholar\.org/paper/(?:[^/]+/)?)?([0-9a-fA-F]{40})/?$")
_PMID = re.compile(
    r"^(?:pmid:?\s*|https?://(?:pubmed\.ncbi\.nlm\.nih\.gov|www\.ncbi\.nlm\.nih\.gov/pubmed)/)(\d{1,9})/?$", re.I
)


def parse_identifier(text: str) -> PaperId | None:
    """One identifier typed by a user: a DOI (bare, ``doi:``, ``https://doi.org/...``), ``PMID:123`` or a PubMed
    URL, an arXiv id (``arXiv:2101.00001v2``, bare ``2101.00001``, ``hep-th/9901001``, an arxiv.org URL), an
    OpenAlex id (``W123``, ``https://openalex.org/W123``) or a Semantic Scholar id (40 hex, or its paper URL).
    Any other text containing exactly such an identifier (a publisher URL with a DOI) gives the first one found.
    None when nothing is recognised (a bare number is ambiguous and is not taken for a PMID)."""
    value = text.strip()
    if not value:
        return None
    if doi := normalise_doi(value):
        return PaperId("doi", doi)
    if match := _PMID.match(value):
        return PaperId("pmid", str(int(match.group(1))))
    if arxiv := normalise_arxiv(value):
        return PaperId("arxiv", arxiv)
    if openalex := normalise_openalex(value):
        return PaperId("openalex", openalex)
    if match := _S2_ID.match(value):
        return PaperId("s2", match.group(1).lower())
    found = find_identifiers(value)
    return found[0] if found else None


_FIND = re.compile(
    r"(?P<doi>\b10\.\d{4,9}/[^\s\"'<>?#&]+)"
    r"|(?:\bPMID:?\s*|pubmed\.ncbi\.nlm\.nih\.gov/)(?P<pmid>\d{1,9})\b"
    rf"|(?:\barxiv:\s*|arxiv\.org/(?:abs|pdf)/)(?P<arxiv>(?:{_ARXIV_NEW}|{_ARXIV_OLD})(?:v\d+)?)",
    re.IGNORECASE,
)


def find_identifiers(text: str) -> list[PaperId]:
    """Every DOI, PMID and arXiv id in free text (pages, search snippets, JSONL), deduplicated, in order of first
    appearance. DOIs lose trailing punctuation (and an unbalanced closing parenthesis); URL-escaped DOIs are
    decoded. arXiv ids are only taken with an ``arXiv:`` prefix or an arxiv.org URL; PMIDs only after ``PMID``
    or in a PubMed URL (bare numbers are too ambiguous)."""
    found: list[PaperId] = []
    seen: set[PaperId] = set()
    for match in _FIND.finditer(unquote(text)):
        pid: PaperId | None = None
        if match.group("doi"):
            doi = normalise_doi(match.group("doi"))
            pid = PaperId("doi", doi) if doi else None
        elif match.group("pmid"):
            pid = PaperId("pmid", str(int(match.group("pmid"))))
        elif match.group("arxiv"):
            arxiv = normalise_arxiv(match.group("arxiv"))
            pid = PaperId("arxiv", arxiv) if arxiv else None
        if pid is not None and pid not in seen:
            seen.add(pid)
            found.append(pid)
    return found


# --- papers -----------------------------------------------------------------------------------------------------


class Paper(BaseModel):
    """A paper as one or both APIs describe it. Id fields hold normal forms (module docstring)."""

    model_config = ConfigDict(frozen=True)

    title: str
    abstract: str | None = None
    year: int | None = None
    venue: str | None = None
    citation_count: int | None = None
    authors: tuple[str, ...] = ()
    doi: str | None = None
    s2_id: str | None = None
    openalex_id: str | None = None
    pmid: str | None = None
    arxiv_id: str | None = None
    pdf_url: str | None = None
    sources: tuple[ApiName, ...] = ()
    # the record's version as its source states it: OpenAlex's ``updated_date`` (Semantic Scholar's Graph API states
    # none); kept on the paper's page, shown by a refresh's re-check (docs/concepts/living-evidence.md)
    updated: str | None = None

    def title_key(self) -> str:
        """``tay:<normalised title>|<first author surname>|<year>``: identity when no DOI is known."""
        first = surname(self.authors[0]) if self.authors else ""
        year = "" if self.year is None else str(self.year)
        return f"tay:{normalise_title(self.title)}|{first}|{year}"

    def key(self) -> str:
        """Canonical identity: ``doi:<doi>`` when a DOI is known, else :meth:`title_key`."""
        return f"doi:{self.doi}" if self.doi else self.title_key()

    def url(self) -> str:
        if self.doi:
            return f"https://doi.org/{self.doi}"
        if self.s2_id:
            return f"https://www.semanticscholar.org/paper/{self.s2_id}"
        if self.openalex_id:
            return f"https://openalex.org/{self.openalex_id}"
        if self.arxiv_id:
            return f"https://arxiv.org/abs/{self.arxiv_id}"
        if self.pmid:
            return f"https://pubmed.ncbi.nlm.nih.gov/{self.pmid}/"
        return ""

    def identifiers(self) -> list[PaperId]:
        """The paper's known ids, most specific first: DOI, S2, OpenAlex, PMID, arXiv."""
        out: list[PaperId] = []
        for kind, value in (
            ("doi", self.doi),
            ("s2", self.s2_id),
            ("openalex", self.openalex_id),
            ("pmid", self.pmid),
            ("arxiv", self.arxiv_id),
        ):
            if value:
                out.append(PaperId(kind, value))  # type: ignore[arg-type]
        return out


_MERGED_FIELDS = (
    "abstract",
    "year",
    "venue",
    "doi",
    "s2_id",
    "openalex_id",
    "pmid",
    "arxiv_id",
    "pdf_url",
    "updated",
)


def merge_papers(a: Paper, b: Paper) -> Paper:
    """The same paper as two descriptions (usually one per API) make it: the preferred side's values win where both
    have one — Semantic Scholar's when only one side comes from it, else ``a``'s — missing or empty fields are
    filled from the other side, ``citation_count`` is the larger, ``sources`` the union."""
    first, second = a, b
    if "semantic_scholar" in b.sources and "semantic_scholar" not in a.sources:
        first, second = b, a
    values: dict[str, object] = {
        name: getattr(first, name) if getattr(first, name) not in (None, "") else getattr(second, name)
        for name in _MERGED_FIELDS
    }
    if isinstance(values["doi"], str) and _is_arxiv_doi(values["doi"]) and second.doi and not _is_arxiv_doi(second.doi):
        values["doi"] = second.doi  # the journal DOI names the paper better than arXiv's record DOI
    counts = [c for c in (a.citation_count, b.citation_count) if c is not None]
    return Paper(
        title=first.title or second.title,
        authors=first.authors or second.authors,
        citation_count=max(counts) if counts else None,
        sources=tuple(name for name in API_ORDER if name in a.sources or name in b.sources),
        **values,
    )


def _aliases(paper: Paper) -> list[str]:
    out = [str(pid) for pid in paper.identifiers()]
    if normalise_title(paper.title):
        out.append(paper.title_key())
    return out


MIN_BARE_TITLE = 20  # characters of normalised title a bare-title match needs


def _is_bare(paper: Paper) -> bool:
    return not paper.authors and paper.year is None and not paper.identifiers()


def _is_arxiv_doi(doi: str | None) -> bool:
    return bool(doi and doi.startswith("10.48550/arxiv."))


def _compatible(a: Paper, b: Paper) -> bool:
    # Two different DOIs are two different papers (a preprint and its journal version), whatever else they share;
    # except arXiv's own DataCite DOI, which names the preprint record of a paper that may have a journal DOI too.
    if not (a.doi and b.doi) or a.doi == b.doi:
        return True
    return _is_arxiv_doi(a.doi) or _is_arxiv_doi(b.doi)


class PaperIndex:
    """The canonical set of papers from both APIs. A paper joins an entry it shares a DOI, an S2 / OpenAlex /
    PubMed / arXiv id or its normalised title + first author's surname + year with (never across two different
    DOIs); entries a newcomer links together merge into one. A bare record (a title, no ids, authors or year: S2's
    unresolved references) joins the single entry with the same title. Iteration follows first insertion."""

    def __init__(self) -> None:
        self._entries: dict[int, Paper] = {}
        self._alias: dict[str, int] = {}
        self._by_title: dict[str, list[int]] = {}
        self._next = 0

    def _matches(self, paper: Paper) -> list[int]:
        found: list[int] = []
        for alias in _aliases(paper):
            entry = self._alias.get(alias)
            if entry is not None and entry not in found and _compatible(self._entries[entry], paper):
                found.append(entry)
        if not found:
            found = self._bare_title_match(paper)
        return sorted(found)

    def _bare_title_match(self, paper: Paper) -> list[int]:
        # A record with a title and nothing else (S2's unresolved references) matches the one entry with that title;
        # so does a full record meeting such a bare entry. Short titles ("Introduction") never match this way.
        title = normalise_title(paper.title)
        if len(title) < MIN_BARE_TITLE:
            return []
        entries = [e for e in self._by_title.get(title, []) if e in self._entries]
        if len(entries) != 1:
            return []
        other = self._entries[entries[0]]
        bare = _is_bare(paper) or _is_bare(other)
        return entries if bare and _compatible(other, paper) else []

    def add(self, paper: Paper) -> Paper:
        """Add ``paper`` (merging it into the entry it matches) and return the merged canonical paper."""
        matches = self._matches(paper)
        if not matches:
            entry = self._next
            self._next += 1
            merged = paper
        else:
            entry = matches[0]
            merged = merge_papers(self._entries[entry], paper)
            for other in matches[1:]:
                if _compatible(merged, self._entries[other]):
                    merged = merge_papers(merged, self._entries.pop(other))
                    for alias, target in list(self._alias.items()):
                        if target == other:
                            self._alias[alias] = entry
        self._entries[entry] = merged
        title = normalise_title(merged.title)
        if entry not in self._by_title.setdefault(title, []):
            self._by_title[title].append(entry)
        for alias in _aliases(merged):
            if alias.startswith("tay:"):
                self._alias.setdefault(alias, entry)
            else:
                self._alias[alias] = entry
        return merged

    def get(self, paper: Paper) -> Paper | None:
        """The canonical paper ``paper`` would merge into, or None."""
        matches = self._matches(paper)
        return self._entries[matches[0]] if matches else None

    def __iter__(self) -> Iterator[Paper]:
        return iter(list(self._entries.values()))

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(frozen=True)
class Citation:
    """``citing`` cites ``cited``, as ``source`` reports it."""

    citing: Paper
    cited: Paper
    source: ApiName
