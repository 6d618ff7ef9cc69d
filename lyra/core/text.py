"""Plain-text helpers shared by the pipeline and the models."""

from __future__ import annotations

import re
import unicodedata

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9(\"'\[])")
_ABBREVIATIONS = ("e.g.", "i.e.", "et al.", "vs.", "approx.", "Fig.", "No.", "Dr.", "cf.")


def split_sentences(text: str) -> list[str]:
    """A light sentence splitter that survives common abbreviations and decimal numbers."""
    protected = text
    for abbr in _ABBREVIATIONS:
        protected = protected.replace(abbr, abbr.replace(".", "\x00"))
    parts = [p.replace("\x00", ".").strip() for p in _SENTENCE_END.split(protected)]
    return [p for p in parts if p]


_TRAILING_PUNCTUATION = ".!?;:,…。！？"


def claim_key(text: str) -> str:
    """What makes two claims of a task the same claim: the text compared without case (Unicode case folding, after
    NFKC normalisation), with runs of whitespace as one space and no trailing punctuation. "Vitamin D  reduces
    falls." and "vitamin d reduces falls" share a key; "... falls?" too, so a question and its statement meet."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(folded.split()).rstrip(_TRAILING_PUNCTUATION + " ")
