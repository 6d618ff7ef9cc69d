"""Local documents as sources: HTML (trafilatura), PDF (pypdf), Markdown, plain text, and JSONL of abstracts.

Every readable document becomes a :class:`SourceDocument`; a document that cannot be used becomes a
:class:`SkippedDocument` with the reason, and reading goes on with the next one.

The walk is bounded by :class:`WalkLimits`. Every file and folder is resolved (symbolic links followed) before it
is read or entered: with ``allowed_roots`` set (job targets), anything whose real path is outside those folders is
skipped with a reason, and the file actually opened is checked again through its descriptor, so a link swapped in
between the check and the open is caught too. Only regular files are read (never a device, FIFO or socket, which
could block or never end), files above ``max_file_bytes`` are skipped, at most ``max_files`` files are read, and
a folder reached twice (a symbolic link loop) is walked once.

A PDF gives its text (the first ``max_pdf_pages`` pages) with title, author and year from its metadata when present
(the title falls back to the file name); an encrypted PDF that needs a password, a damaged one and one without a
text layer are skipped with the reason (:mod:`lyra.sources.pdf`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lyra.sources.pdf import DEFAULT_MAX_PAGES, PdfSkipped, read_pdf

log = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = {".html", ".htm", ".md", ".markdown", ".txt", ".jsonl", ".pdf"}
SKIPPED_NAMES = {"readme.md", "questions.json"}
DEFAULT_MAX_FILE_BYTES = 20_000_000
DEFAULT_MAX_FILES = 10_000
NOT_REGULAR = "not a regular file (a device, FIFO or socket is never read)"
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class WalkLimits:
    """What a walk may read. ``allowed_roots`` None: not confined (the CLI reads as the local user)."""

    allowed_roots: tuple[Path, ...] | None = None
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_files: int = DEFAULT_MAX_FILES
    max_pdf_pages: int = DEFAULT_MAX_PAGES
    _resolved: tuple[Path, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        resolved = tuple(root.resolve() for root in self.allowed_roots or ())
        object.__setattr__(self, "_resolved", resolved)

    def permits(self, real: Path) -> bool:
        """Whether a resolved path may be read: always when not confined, else when it is below an allowed root."""
        if self.allowed_roots is None:
            return True
        return any(real == root or real.is_relative_to(root) for root in self._resolved)


@dataclass(frozen=True)
class SourceDocument:
    url: str
    title: str | None
    text: str
    page_type: str  # web | pdf | academic | local
    origin: str  # the file (and line) it came from
    doi: str | None = None
    year: int | None = None
    venue: str | None = None
    extraction_method: str = "text"
    raw: str | None = None  # the fetched source when it differs from ``text`` (HTML): scanned for dangerous patterns
    author: str | None = None


@dataclass(frozen=True)
class SkippedDocument:
    origin: str
    reason: str


def _markdown_title(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return None


def _html_document(path: Path, real: Path, raw: str) -> SourceDocument | SkippedDocument:
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
        url=real.as_uri(),
        title=title,
        text=text,
        page_type="local",
        origin=str(path),
        extraction_method="trafilatura",
        raw=raw,
    )


def _jsonl_documents(path: Path, real: Path, raw: str) -> Iterator[SourceDocument | SkippedDocument]:
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
        url = item.get("url") or (f"https://doi.org/{doi}" if doi else f"{real.as_uri()}#L{number}")
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


def _pdf_document(path: Path, real: Path, data: bytes, limits: WalkLimits) -> SourceDocument | SkippedDocument:
    found = read_pdf(data, max_pages=limits.max_pdf_pages)
    if isinstance(found, PdfSkipped):
        return SkippedDocument(str(path), found.reason)
    return SourceDocument(
        url=real.as_uri(),
        title=found.title or path.stem.replace("_", " "),
        text=found.text,
        page_type="local",
        origin=str(path),
        doi=found.doi,
        year=found.year,
        extraction_method="pypdf",
        raw=found.metadata_text or None,  # the metadata is scanned for dangerous patterns too
        author=found.author,
    )


def _opened_path(fd: int, fallback: Path) -> Path:
    """The real path of an open file (Linux: /proc/self/fd), else the path that was opened."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return fallback


def _read_bounded(origin: str, real: Path, limits: WalkLimits) -> bytes | SkippedDocument:
    """The bytes of one regular file, checked on the open descriptor (type, place, size) before reading."""
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as exc:
        return SkippedDocument(origin, f"unreadable: {exc.strerror}")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return SkippedDocument(origin, NOT_REGULAR)
        if not limits.permits(_opened_path(fd, real)):
            return SkippedDocument(origin, "outside the allowed folders (LYRA_ALLOWED_ROOTS)")
        too_large = SkippedDocument(
            origin, f"larger than {limits.max_file_bytes} bytes (LYRA_INGEST_MAX_FILE_BYTES); not read"
        )
        if info.st_size > limits.max_file_bytes:
            return too_large
        chunks: list[bytes] = []
        size = 0
        while size <= limits.max_file_bytes:  # the file may grow after fstat
            chunk = os.read(fd, min(1 << 20, limits.max_file_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limits.max_file_bytes:
            return too_large
        return b"".join(chunks)
    except OSError as exc:
        return SkippedDocument(origin, f"unreadable: {exc.strerror}")
    finally:
        os.close(fd)


def _documents(path: Path, real: Path, raw: str) -> Iterator[SourceDocument | SkippedDocument]:
    suffix = path.suffix.lower()
    if not raw.strip():
        yield SkippedDocument(str(path), "empty file")
        return
    if suffix == ".jsonl":
        yield from _jsonl_documents(path, real, raw)
    elif suffix in (".html", ".htm"):
        yield _html_document(path, real, raw)
    else:
        title = _markdown_title(raw) if suffix in (".md", ".markdown") else None
        text = re.sub(r"^#+\s*", "", raw, flags=re.M) if title else raw
        yield SourceDocument(
            url=real.as_uri(),
            title=title or path.stem.replace("_", " "),
            text=text,
            page_type="local",
            origin=str(path),
            extraction_method="markdown" if title else "text",
        )


def read_file(
    path: Path, limits: WalkLimits = WalkLimits(), real: Path | None = None
) -> Iterator[SourceDocument | SkippedDocument]:
    """The documents in one file (``real``: its resolved path when the caller already resolved it)."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        yield SkippedDocument(str(path), f"unsupported file type {suffix or '(none)'}")
        return
    try:
        real = real or path.resolve(strict=True)
        regular = stat.S_ISREG(os.stat(real).st_mode)
    except (OSError, RuntimeError):
        yield SkippedDocument(str(path), "no such file, or a broken symbolic link")
        return
    if not regular:  # checked before opening: opening a device can have effects of its own
        yield SkippedDocument(str(path), NOT_REGULAR)
        return
    if not limits.permits(real):
        yield SkippedDocument(str(path), "outside the allowed folders (LYRA_ALLOWED_ROOTS)")
        return
    data = _read_bounded(str(path), real, limits)
    if isinstance(data, SkippedDocument):
        yield data
        return
    if suffix == ".pdf":
        yield _pdf_document(path, real, data, limits)
        return
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        yield SkippedDocument(str(path), f"not valid UTF-8 (byte {exc.start})")
        return
    yield from _documents(path, real, raw)


@dataclass
class _Walk:
    limits: WalkLimits
    files: int = 0
    folders_seen: set[Path] = field(default_factory=set)

    def entries(self, shown: Path, real: Path) -> Iterator[tuple[Path, Path] | SkippedDocument]:
        """(shown path, real path) of every regular file to read below a folder, depth first in name order;
        what is not read is a SkippedDocument (hidden files and the corpus's own README are passed over)."""
        if real in self.folders_seen:
            yield SkippedDocument(str(shown), "folder already walked (a symbolic link loop or a second link to it)")
            return
        self.folders_seen.add(real)
        try:
            with os.scandir(real) as scan:
                names = sorted(entry.name for entry in scan)
        except OSError as exc:
            yield SkippedDocument(str(shown), f"unreadable folder: {exc.strerror}")
            return
        for name in names:
            child = shown / name
            try:
                child_real = (real / name).resolve(strict=True)
                info = os.stat(child_real)
            except (OSError, RuntimeError):
                yield SkippedDocument(str(child), "a broken symbolic link or an unreadable entry")
                continue
            if not self.limits.permits(child_real):
                link = (real / name).is_symlink()
                yield SkippedDocument(
                    str(child),
                    ("a symbolic link leading " if link else "") + "outside the allowed folders (LYRA_ALLOWED_ROOTS)",
                )
                continue
            if stat.S_ISDIR(info.st_mode):
                yield from self.entries(child, child_real)
            elif name.startswith(".") or name.lower() in SKIPPED_NAMES:
                continue
            elif not stat.S_ISREG(info.st_mode):
                yield SkippedDocument(str(child), NOT_REGULAR)
            else:
                yield child, child_real


def iter_documents(
    paths: Sequence[Path], limits: WalkLimits = WalkLimits()
) -> Iterator[SourceDocument | SkippedDocument]:
    """Every document under ``paths`` (files, or folders walked recursively in name order), within ``limits``."""
    walk = _Walk(limits)
    for root in paths:
        try:
            real = root.resolve(strict=True)
            info = os.stat(real)
        except (OSError, RuntimeError):
            yield SkippedDocument(str(root), "no such file or folder")
            continue
        if not limits.permits(real):
            yield SkippedDocument(str(root), "outside the allowed folders (LYRA_ALLOWED_ROOTS)")
            continue
        found = walk.entries(root, real) if stat.S_ISDIR(info.st_mode) else iter([(root, real)])
        for item in found:
            if isinstance(item, SkippedDocument):
                yield item
                continue
            shown, file_real = item
            if shown.name.startswith(".") or shown.name.lower() in SKIPPED_NAMES:
                continue
            if shown.suffix.lower() not in SUPPORTED_SUFFIXES:
                yield SkippedDocument(str(shown), f"unsupported file type {shown.suffix.lower() or '(none)'}")
                continue
            if walk.files >= limits.max_files:
                yield SkippedDocument(
                    str(root),
                    f"file limit reached: only the first {limits.max_files} files were read (LYRA_INGEST_MAX_FILES)",
                )
                return
            walk.files += 1
            yield from read_file(shown, limits, file_real)
