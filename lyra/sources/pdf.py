"""Text and metadata of a PDF with ``pypdf``, for local files and fetched documents alike.

:func:`read_pdf` never raises for a bad document: an encrypted PDF that needs a password, a broken file, a PDF with
no text layer (a scan) or one whose parser fails become a :class:`PdfSkipped` with the reason. Only the first
``max_pages`` pages are read. Title, author and year come from the document information dictionary when present
(the year from ``/CreationDate``), a DOI from a ``/doi`` or ``/prism:doi`` entry.
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_MAX_PAGES", "PdfSkipped", "PdfText", "read_pdf"]

DEFAULT_MAX_PAGES = 500
DOI_PATTERN = re.compile(r"\b(10\.\d{4,9}/[^\s\"'<>]+)")


@dataclass(frozen=True)
class PdfText:
    text: str
    title: str | None
    author: str | None
    year: int | None
    doi: str | None
    pages: int  # pages in the document
    pages_read: int
    metadata_text: str  # every metadata value, for the dangerous-pattern scan


@dataclass(frozen=True)
class PdfSkipped:
    reason: str


def _clean(value: Any) -> str | None:
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text or None


def _metadata(reader: Any) -> tuple[str | None, str | None, int | None, str | None, str]:
    try:
        info = reader.metadata
    except Exception as exc:  # a broken information dictionary is not a reason to lose the text
        log.debug("unreadable PDF metadata: %s", exc)
        return None, None, None, None, ""
    if info is None:
        return None, None, None, None, ""
    title = _clean(info.title)
    author = _clean(info.author)
    year: int | None = None
    try:
        created = info.creation_date
    except Exception:  # a malformed date string
        created = None
    if created is not None and 1000 <= created.year <= 2200:
        year = created.year
    elif match := re.match(r"(?:D:)?(\d{4})", str(info.get("/CreationDate") or "")):
        candidate = int(match.group(1))
        year = candidate if 1000 <= candidate <= 2200 else None
    doi: str | None = None
    for key in ("/doi", "/DOI", "/prism:doi", "/dc:identifier"):
        found = DOI_PATTERN.search(str(info.get(key) or ""))
        if found:
            doi = found.group(1).rstrip(".,;")
            break
    values = "\n".join(v for v in (_clean(info.get(k)) for k in info) if v)
    return title, author, year, doi, values


def read_pdf(data: bytes, *, max_pages: int = DEFAULT_MAX_PAGES) -> PdfText | PdfSkipped:
    """The text of a PDF given as bytes, or why it cannot be used."""
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PyPdfError

    if not data.lstrip()[:5].startswith(b"%PDF-"):
        return PdfSkipped("not a PDF (no %PDF- header)")
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")  # many PDFs are encrypted with an empty user password
            except (PyPdfError, NotImplementedError, ValueError) as exc:
                return PdfSkipped(f"encrypted PDF that cannot be opened: {exc}")
            if not opened:
                return PdfSkipped("encrypted PDF: a password is needed to read it")
        pages = len(reader.pages)
        texts: list[str] = []
        for page in reader.pages[:max_pages]:
            texts.append(page.extract_text() or "")
    except FileNotDecryptedError:
        return PdfSkipped("encrypted PDF: a password is needed to read it")
    except RecursionError:
        return PdfSkipped("broken PDF: nested too deeply to parse")
    except Exception as exc:  # pypdf raises many kinds for damaged files; one bad PDF must not stop an ingest
        return PdfSkipped(f"broken PDF: {type(exc).__name__}: {str(exc)[:200]}")
    text = "\n\n".join(t.strip() for t in texts if t.strip())
    if not text:
        return PdfSkipped("no text in the PDF (a scan without a text layer?)")
    title, author, year, doi, metadata_text = _metadata(reader)
    return PdfText(
        text=text,
        title=title,
        author=author,
        year=year,
        doi=doi,
        pages=pages,
        pages_read=min(pages, max_pages),
        metadata_text=metadata_text,
    )
