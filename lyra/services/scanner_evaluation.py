"""Measuring the prompt-injection scanner (`lyra eval scanner`): catch rate on labelled hostile snippets,
false-positive rate on tricky benign snippets and on real scientific text.

Hostile and benign sets are JSONL with ``id``, ``text`` and optionally ``style`` (``tests/data/injection/``).
A corpus is one of the claim/evidence files of ``../shared/training`` (``evidence_title``, ``evidence_text``):
every distinct evidence text is scanned once (abstracts repeat across claim pairs). No model, no Neo4j.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from lyra.core.errors import ConfigError, InvalidInputError
from lyra.sources.injection import detect_injection

__all__ = [
    "FlaggedText",
    "ScannedSet",
    "ScannerReport",
    "SetRole",
    "corpus_texts",
    "load_snippets",
    "scanner_report",
]

SetRole = Literal["hostile-heldout", "hostile-dev", "benign", "corpus"]
Tick = Callable[[int], None]


class FlaggedText(BaseModel):
    """A text the scanner flagged (for a benign set or a corpus: a false positive to read)."""

    id: str
    kinds: list[str]
    detail: str
    excerpt: str


class ScannedSet(BaseModel):
    name: str
    role: SetRole
    path: str
    texts: int
    flagged: int
    rate: float  # flagged / texts: the catch rate of a hostile set, the false-positive rate of the others
    by_kind: dict[str, int]
    by_style: dict[str, tuple[int, int]]  # style -> (flagged, texts), for the hand-written sets
    missed: list[str]  # ids of hostile texts that passed
    flagged_texts: list[FlaggedText]  # benign sets and corpora only
    seconds: float


class ScannerReport(BaseModel):
    sets: list[ScannedSet]


def load_snippets(path: Path) -> list[tuple[str, str, str]]:
    """(id, style, text) of every line of a snippet JSONL; InvalidInputError for a line without id or text."""
    if not path.is_file():
        raise ConfigError(f"snippet file not found: {path}")
    snippets: list[tuple[str, str, str]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(str(path), f"line {number} is not JSON: {exc.msg}") from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str) or not isinstance(row.get("id"), str):
            raise InvalidInputError(str(path), f"line {number} needs a string 'id' and a string 'text'")
        style = row.get("style")
        snippets.append((row["id"], style if isinstance(style, str) else "-", row["text"]))
    return snippets


def corpus_texts(path: Path) -> list[tuple[str, str]]:
    """(pair_id of its first pair, text) for every distinct evidence text (title and text) of a training JSONL."""
    if not path.is_file():
        raise ConfigError(f"corpus not found: {path}")
    seen: dict[str, str] = {}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            evidence = row.get("evidence_text")
            if not isinstance(evidence, str):
                raise InvalidInputError(str(path), f"line {number} has no 'evidence_text'")
            title = row.get("evidence_title")
            text = f"{title}\n{evidence}" if isinstance(title, str) and title else evidence
            seen.setdefault(text, str(row.get("pair_id", number)))
    return [(pair_id, text) for text, pair_id in seen.items()]


def _scan(
    name: str, role: SetRole, path: Path, items: Sequence[tuple[str, str, str]], progress: Tick | None
) -> ScannedSet:
    start = time.perf_counter()
    by_kind: Counter[str] = Counter()
    styles: dict[str, list[int]] = {}
    missed: list[str] = []
    flagged_texts: list[FlaggedText] = []
    flagged = 0
    for item_id, style, text in items:
        findings = detect_injection(text)
        counts = styles.setdefault(style, [0, 0])
        counts[1] += 1
        if findings:
            flagged += 1
            counts[0] += 1
            kinds = sorted({f.kind for f in findings})
            by_kind.update(kinds)
            if not role.startswith("hostile"):
                first = findings[0]
                flagged_texts.append(FlaggedText(id=item_id, kinds=kinds, detail=first.detail, excerpt=first.excerpt))
        elif role.startswith("hostile"):
            missed.append(item_id)
        if progress is not None:
            progress(1)
    return ScannedSet(
        name=name,
        role=role,
        path=str(path),
        texts=len(items),
        flagged=flagged,
        rate=flagged / len(items) if items else 0.0,
        by_kind=dict(sorted(by_kind.items())),
        by_style={} if role == "corpus" else {k: (v[0], v[1]) for k, v in sorted(styles.items())},
        missed=missed,
        flagged_texts=flagged_texts,
        seconds=time.perf_counter() - start,
    )


def scanner_report(
    hostile_heldout: Sequence[Path],
    hostile_dev: Sequence[Path],
    benign: Sequence[Path],
    corpora: Sequence[Path],
    progress: Tick | None = None,
) -> ScannerReport:
    """Scan every set; the held-out hostile set comes first (the figure to quote), the corpora last."""
    sets: list[ScannedSet] = []
    hostile: list[tuple[Path, SetRole]] = [(p, "hostile-heldout") for p in hostile_heldout]
    hostile += [(p, "hostile-dev") for p in hostile_dev]
    for path, role in hostile:
        sets.append(_scan(path.stem, role, path, load_snippets(path), progress))
    for path in benign:
        sets.append(_scan(path.stem, "benign", path, load_snippets(path), progress))
    for path in corpora:
        items = [(pair_id, "-", text) for pair_id, text in corpus_texts(path)]
        sets.append(_scan(path.stem, "corpus", path, items, progress))
    return ScannerReport(sets=sets)
