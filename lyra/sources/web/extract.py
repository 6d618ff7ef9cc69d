"""From fetched bytes to a :class:`SourceDocument`: HTML with trafilatura (main text, title, date, author, the links of
the main content), PDF with pypdf, and the DOI and date from scholarly meta tags (``citation_doi``, ``dc.identifier``,
``prism.doi``, ``citation_publication_date``, ...)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from lyra.sources.local_files import SourceDocument
from lyra.sources.pdf import DOI_PATTERN, PdfSkipped, read_pdf

__all__ = ["Extracted", "Link", "decode_html", "extract_html", "extract_pdf", "scholarly_meta"]

_META_SCAN_CHARS = 500_000
DOI_META = ("citation_doi", "dc.identifier", "dcterms.identifier", "prism.doi", "bepress_citation_doi", "doi")
DATE_META = (
    "citation_publication_date",
    "citation_date",
    "citation_online_date",
    "dc.date",
    "dcterms.issued",
    "dcterms.date",
    "prism.publicationdate",
    "article:published_time",
)


@dataclass(frozen=True)
class Link:
    """A link of the page's main content: absolute http(s) URL and its anchor text."""

    href: str
    text: str


@dataclass(frozen=True)
class Extracted:
    document: SourceDocument | None
    links: tuple[Link, ...] = ()
    skip_reason: str | None = None  # when document is None
    skip_code: str | None = None


class _MetaParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.meta: dict[str, list[str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "meta":
            return
        values = {k.lower(): (v or "") for k, v in attrs}
        key = (values.get("name") or values.get("property") or "").strip().lower()
        content = values.get("content", "").strip()
        if key and content:
            self.meta.setdefault(key, []).append(content)


def scholarly_meta(html: str) -> dict[str, list[str]]:
    """``<meta name|property=... content=...>`` values by lower-case name (the first 500,000 characters)."""
    parser = _MetaParser()
    try:
        parser.feed(html[:_META_SCAN_CHARS])
        parser.close()
    except (AssertionError, ValueError):  # html.parser gives up on some broken markup
        pass
    return parser.meta


def _doi(meta: dict[str, list[str]]) -> str | None:
    for key in DOI_META:
        for value in meta.get(key, []):
            found = DOI_PATTERN.search(value)
            if found:
                return found.group(1).rstrip(".,;").lower()
    return None


def _year(*candidates: str | None) -> int | None:
    for value in candidates:
        found = re.search(r"\b(1[5-9]\d\d|2[01]\d\d)\b", value or "")
        if found:
            return int(found.group(1))
    return None


def decode_html(body: bytes, charset: str | None) -> str:
    """Text of an HTML response: the header's charset, else a ``<meta charset>`` near the top, else UTF-8."""
    candidates: list[str] = []
    if charset:
        candidates.append(charset)
    found = re.search(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_.:-]{1,40})""", body[:4096], re.I)
    if found:
        candidates.append(found.group(1).decode("ascii"))
    for name in candidates:
        try:
            return body.decode(name, errors="replace")
        except LookupError:
            continue
    return body.decode("utf-8", errors="replace")


def _links(body: object, base: str, limit: int) -> tuple[Link, ...]:
    seen: set[tuple[str, str]] = set()
    out: list[Link] = []
    for ref in body.iter("ref"):  # type: ignore[attr-defined]
        target = (ref.get("target") or "").strip()
        if not target:
            continue
        href = urljoin(base, target)
        if urlsplit(href).scheme not in ("http", "https"):
            continue
        text = " ".join("".join(ref.itertext()).split())
        key = (href, text)
        if key in seen:
            continue
        if len(out) >= limit:
            break
        seen.add(key)
        out.append(Link(href=href, text=text))
    return tuple(out)


def extract_html(html: str, url: str, *, origin: str, max_links: int = 1000) -> Extracted:
    """Main text (trafilatura, precision first), metadata and the main content's links of one HTML page."""
    import trafilatura
    from lxml import etree
    from trafilatura.xml import xmltotxt

    found = trafilatura.bare_extraction(
        html,
        url=url,
        with_metadata=True,
        include_links=True,
        include_comments=False,
        include_tables=True,
        favor_precision=True,
    )
    body = getattr(found, "body", None)
    if found is None or body is None:
        return Extracted(None, skip_reason="no main text found in the HTML", skip_code="no_text")
    links = _links(body, url, max_links)
    etree.strip_tags(body, "ref")  # anchor texts stay in the text, the markdown link syntax goes
    text = xmltotxt(body, False) or ""
    if not text.strip():
        return Extracted(None, links, "no main text found in the HTML", "no_text")
    meta = scholarly_meta(html)
    title = getattr(found, "title", None) or next(iter(meta.get("citation_title", [])), None)
    date = getattr(found, "date", None)
    year = _year(*(meta.get(k, [None])[0] for k in DATE_META if k in meta), date)
    author = getattr(found, "author", None) or (
        "; ".join(meta["citation_author"]) if meta.get("citation_author") else None
    )
    venue = next(iter(meta.get("citation_journal_title", [])), None)
    document = SourceDocument(
        url=url,
        title=title,
        text=text,
        page_type="web",
        origin=origin,
        doi=_doi(meta),
        year=year,
        venue=venue,
        extraction_method="trafilatura",
        raw=html,
        author=author,
    )
    return Extracted(document, links)


def extract_pdf(data: bytes, url: str, *, origin: str, max_pages: int) -> Extracted:
    found = read_pdf(data, max_pages=max_pages)
    if isinstance(found, PdfSkipped):
        code = "no_text" if found.reason.startswith("no text") else "bad_pdf"
        return Extracted(None, skip_reason=found.reason, skip_code=code)
    name = urlsplit(url).path.rsplit("/", 1)[-1]
    document = SourceDocument(
        url=url,
        title=found.title or (name.removesuffix(".pdf").replace("_", " ") if name else None),
        text=found.text,
        page_type="pdf",
        origin=origin,
        doi=found.doi,
        year=found.year,
        extraction_method="pypdf",
        raw=found.metadata_text or None,
        author=found.author,
    )
    return Extracted(document)
