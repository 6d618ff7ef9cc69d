"""Local documents as sources: HTML (trafilatura), Markdown, plain text, and JSONL of abstracts.

Every readable document becomes a :class:`SourceDocument`; a document that cannot be used becomes a
:class:`SkippedDocument` with the reason, and reading goes on with the next one.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = {".html", ".htm", ".md", ".markdown", ".txt", ".jsonl"}
SKIPPED_NAMES = {"readme.md", "questions.json"}


@dataclass(frozen=True)
class SourceDocument:
    url: str
    title: str | None
    text: str
    page_type: str  # web | academic | local
    origin: str  # the file (and line) it came from
    doi: str | None = None
    year: int | None = None
    venue: str | None = None
    extraction_method: str = "text"
    raw: str | None = None  # the fetched source when it differs from ``text`` (HTML): scanned for dangerous patterns


@dataclass(frozen=True)
class SkippedDocument:
    origin: str
    reason: str


def _markdown_title(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return None


def _html_document(path: Path, raw: str) -> SourceDocument | SkippedDocument:
    import trafilatura

    text = trafilatura.extract(raw, include_comments=False, include_tables=True, favor_precision=True)
    if not text or not text.strip():
        return SkippedDocument(str(path), "no main text found in the HTML")
    title = None
    metadata = trafilatura.extract_metadata(raw)
    if metadata is not None and metadata.title:
        title = metadata.title
    if title is None:
        match = re.search(r"<title>(.*?)</title>", raw, re.I | re.S)
        title = match.group(1).strip() if match else None
    return SourceDocument(
        url=path.resolve().as_uri(),
        title=title,
        text=text,
        page_type="local",
        origin=str(path),
        extraction_method="trafilatura",
        raw=raw,
    )


def _jsonl_documents(path: Path, raw: str) -> Iterator[SourceDocument | SkippedDocument]:
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        origin = f"{path}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            yield SkippedDocument(origin, f"invalid JSON: {exc.msg}")
            continue
        if not isinstance(item, dict):
            yield SkippedDocument(origin, "each line must be a JSON object")
            continue
        abstract = str(item.get("abstract") or "").strip()
        if not abstract:
            yield SkippedDocument(origin, "no `abstract`")
            continue
        doi = item.get("doi") or None
        url = item.get("url") or (f"https://doi.org/{doi}" if doi else f"{path.resolve().as_uri()}#L{number}")
        year = item.get("year")
        yield SourceDocument(
            url=str(url),
            title=item.get("title"),
            text=abstract,
            page_type="academic",
            origin=origin,
            doi=str(doi) if doi else None,
            year=int(year) if isinstance(year, int | str) and str(year).isdigit() else None,
            venue=item.get("venue"),
            extraction_method="abstract",
        )


def read_file(path: Path) -> Iterator[SourceDocument | SkippedDocument]:
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        yield SkippedDocument(str(path), f"unsupported file type {suffix or '(none)'}")
        return
    try:
        raw = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        yield SkippedDocument(str(path), f"not valid UTF-8 (byte {exc.start})")
        return
    except OSError as exc:
        yield SkippedDocument(str(path), f"unreadable: {exc.strerror}")
        return
    if not raw.strip():
        yield SkippedDocument(str(path), "empty file")
        return
    if suffix == ".jsonl":
        yield from _jsonl_documents(path, raw)
    elif suffix in (".html", ".htm"):
        yield _html_document(path, raw)
    else:
        title = _markdown_title(raw) if suffix in (".md", ".markdown") else None
        text = re.sub(r"^#+\s*", "", raw, flags=re.M) if title else raw
        yield SourceDocument(
            url=path.resolve().as_uri(),
            title=title or path.stem.replace("_", " "),
            text=text,
            page_type="local",
            origin=str(path),
            extraction_method="markdown" if title else "text",
        )


def iter_documents(paths: list[Path]) -> Iterator[SourceDocument | SkippedDocument]:
    """Every document under ``paths`` (files, or folders walked recursively in name order)."""
    for root in paths:
        if not root.exists():
            yield SkippedDocument(str(root), "no such file or folder")
            continue
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            if path.name.lower() in SKIPPED_NAMES or any(part.startswith(".") for part in path.parts[-1:]):
                continue
            yield from read_file(path)
