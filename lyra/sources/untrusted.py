"""Source text on its way out of Lyra: marked as data, scanned, withheld when it carries instructions.

Every string Lyra read from a source (a page's title, a passage, a search snippet, a graph caption, a string a
query returns) reaches an AI assistant through the doors. :func:`source_text` gives such a string the one shape the
doors use, ``{"text", "untrusted": true, "truncated", "flagged", "withheld", "findings"}``: ``untrusted`` tells the
client it is the source's text, never Lyra's and never an instruction; ``flagged`` is the dangerous-pattern
scanner's verdict (:mod:`lyra.sources.injection`); a flagged text is withheld (``text`` is null, ``findings`` say
why) unless the caller asked for flagged text explicitly (``reveal_flagged``).

Ingest scans every source whole before anything is stored and refuses a source the scanner flags, so a stored
text is flagged only when the scanner has learned more since (or the text came in another way, e.g. an imported
graph). A page stamped with the current :func:`scanner_version` at ingest was scanned clean by these very rules,
and its texts are not scanned again (``known_clean``); everything else is scanned here, each distinct text once
per process (:func:`scan_verdict` keeps a bounded cache).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from lyra.sources import injection

SCAN_CACHE_SIZE = 65_536
MAX_FINDINGS_SHOWN = 3
MAX_SCANNED_CHARS = 200_000  # longer strings are scanned in their first and last parts only
ROWS_SCAN_BUDGET = 400_000  # characters of query rows scanned per answer (about a second; adversarial text more)


@cache
def scanner_version() -> str:
    """A short hash of the scanner's rules (its module's source): a page stamped with it at ingest was scanned by
    exactly these rules. Any change to the rules changes it, so older stamps are re-checked on the way out."""
    return hashlib.sha256(Path(injection.__file__).read_bytes()).hexdigest()[:12]


@lru_cache(maxsize=SCAN_CACHE_SIZE)
def scan_verdict(text: str) -> tuple[str, ...]:
    """The scanner's findings for ``text`` as short lines (``kind: detail``); empty when clean."""
    if len(text) > MAX_SCANNED_CHARS:
        half = MAX_SCANNED_CHARS // 2
        text = f"{text[:half]}\n{text[-half:]}"
    return tuple(f"{f.kind}: {f.detail}" for f in injection.detect_injection(text)[:MAX_FINDINGS_SHOWN])


def shorten(text: str, limit: int | None) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` characters at a word boundary (with an ellipsis), and whether it was cut."""
    if limit is None or len(text) <= limit:
        return text, False
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip() + " …", True


def source_text(
    text: str | None, limit: int | None = None, *, reveal: bool = False, known_clean: bool = False
) -> dict[str, Any] | None:
    """``text`` from a source in the doors' shape (see the module docstring); None stays None.

    The whole text is scanned, not only the part shown. ``known_clean``: the text belongs to a page the current
    scanner passed at ingest. ``reveal``: show a flagged text anyway (still marked flagged and untrusted).
    """
    if text is None:
        return None
    findings = () if known_clean else scan_verdict(text)
    flagged = bool(findings)
    shown, truncated = shorten(text, limit)
    withheld = flagged and not reveal
    return {
        "text": None if withheld else shown,
        "untrusted": True,
        "truncated": truncated,
        "flagged": flagged,
        "withheld": withheld,
        "findings": list(findings),
    }


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, string) for every string in a JSON-like value, depth first."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def _replace(value: Any, path: str, withheld: set[str]) -> Any:
    if isinstance(value, str):
        return None if path in withheld else value
    if isinstance(value, dict):
        return {key: _replace(item, f"{path}.{key}", withheld) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_replace(item, f"{path}[{index}]", withheld) for index, item in enumerate(value)]
    return value


def screen_rows(
    rows: list[dict[str, Any]], *, reveal: bool = False, char_budget: int = ROWS_SCAN_BUDGET
) -> tuple[list[dict[str, Any]], list[str], list[str], bool]:
    """Query rows with every string the scanner flags replaced by null (unless ``reveal``).

    Returns (rows, the flagged values' paths such as ``rows[3].title``, their findings, whether every string was
    scanned whole: strings beyond ``char_budget`` characters in total are passed on unscanned, a string longer than
    MAX_SCANNED_CHARS is scanned in its two ends only, and the caller says so).
    """
    flagged: list[str] = []
    findings: list[str] = []
    spent = 0
    complete = True
    for path, text in _strings(rows, "rows"):
        if spent + len(text) > char_budget:
            complete = False
            break
        spent += len(text)
        complete = complete and len(text) <= MAX_SCANNED_CHARS
        verdict = scan_verdict(text)
        if verdict:
            flagged.append(path)
            findings.extend(f"{path}: {line}" for line in verdict[:1])
    if not flagged or reveal:
        return rows, flagged, findings, complete
    return _replace(rows, "rows", set(flagged)), flagged, findings, complete
