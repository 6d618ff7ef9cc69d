"""Cut document text into passages (fragments) of sensible size with a sentence of overlap."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lyra.core.text import split_sentences


def _looks_like_heading(paragraph: str) -> bool:
    """A short line without closing punctuation: a title, a section heading, a byline."""
    return len(paragraph) <= 120 and not paragraph.rstrip().endswith((".", "!", "?", ":", ";", '"', "'", ")"))


@dataclass(frozen=True)
class Passage:
    text: str
    position: int


def chunk_text(text: str, max_chars: int = 900, overlap_sentences: int = 1, min_chars: int = 40) -> list[Passage]:
    """Paragraph-aware chunking: paragraphs are kept whole when they fit, long ones are split at sentence
    boundaries into windows of at most ``max_chars`` that overlap by ``overlap_sentences`` sentences.
    Very short pieces (headings, bylines) are merged into the next passage or dropped."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]
    windows: list[str] = []
    carry = ""
    for paragraph in paragraphs:
        paragraph = f"{carry} {paragraph}".strip() if carry else paragraph
        carry = ""
        if len(paragraph) < min_chars or _looks_like_heading(paragraph):
            carry = paragraph  # headings and bylines travel with the paragraph that follows them
            continue
        if len(paragraph) <= max_chars:
            windows.append(paragraph)
            continue
        sentences = split_sentences(paragraph)
        current: list[str] = []
        for sentence in sentences:
            if current and len(" ".join([*current, sentence])) > max_chars:
                windows.append(" ".join(current))
                current = current[-overlap_sentences:] if overlap_sentences else []
                if current and len(" ".join([*current, sentence])) > max_chars:
                    current = []
            current.append(sentence)
        if current:
            windows.append(" ".join(current))
    if carry and windows:
        windows[-1] = f"{windows[-1]} {carry}"
    elif carry and len(carry) >= 10:
        windows.append(carry)
    return [Passage(text=w[: max_chars * 2], position=i) for i, w in enumerate(windows)]
