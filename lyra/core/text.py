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


# ----------------------------------------------------------------------------- questions are not claims
# A claim is a statement the stance judge can find supported or refuted; a question is neither (decision record 0010).
# Auxiliary verbs that open a yes/no question ("Does microcredit raise consumption"). Left out because a statement
# may open with them: "may" (the month), "will" (a name), "be", "must"/"need" (rarely a question opener).
_QUESTION_AUXILIARIES = frozenset(
    "is are was were do does did have has had can could should would shall might isn't aren't wasn't weren't don't "
    "doesn't didn't haven't hasn't can't cannot couldn't shouldn't wouldn't".split()
)
# Openers of a conditional inversion statement when a clause follows the comma ("Had the loans been larger, ...",
# "Should the programme end, ...", "Were rates lower, ..."): a question only without a comma.
_INVERSION_OPENERS = frozenset({"had", "should", "were"})
# Interrogative words that open a question whatever follows ("Why do ...", "Which programmes ...", "Who ...").
_WH_ALWAYS = frozenset({"why", "which", "who", "whom", "whose"})
# Interrogative words that also open statements ("When credit is cheap, ...", "How much people earn depends on ...",
# "What matters is ..."): a question only when an auxiliary follows at once ("When did ...", "What is ...", "How does
# ...") or, for "how", after one degree word ("How much does ...", "How large is ...").
_WH_WITH_AUXILIARY = frozenset({"what", "how", "when", "where"})
_DEGREE_WORDS = frozenset(
    "much many large big small often far long strong strongly well likely common important effective".split()
)
_QUESTION_END = re.compile(r"[?？]\W*$")
_LEADING_WORDS = re.compile(r"[A-Za-z']+")


def question_cue(text: str) -> str | None:
    """Why ``text`` reads as a question rather than a statement, or None when it reads as a statement.

    A question is text that ends with a question mark (quotes and brackets after it allowed; the full-width one
    too), opens with an inverted question mark, opens with an auxiliary verb ("Does ...", "Is ...", "Can ...";
    "Had/Should/Were ..." only without a comma, as a comma marks a conditional statement), opens with "why",
    "which", "who", "whom" or "whose", or opens with "what", "how", "when" or "where" followed by an auxiliary
    ("What is ...", "How does ...") or, after "how", by a degree word and an auxiliary ("How much does ...")."""
    stripped = text.strip()
    if not stripped:
        return None
    if _QUESTION_END.search(stripped):
        return "it ends with a question mark"
    if stripped.startswith("¿"):
        return "it opens with an inverted question mark"
    words = [w.lower() for w in _LEADING_WORDS.findall(stripped[:200])][:3]
    if not words:
        return None
    first = words[0]
    if first in _QUESTION_AUXILIARIES and (first not in _INVERSION_OPENERS or "," not in stripped):
        return f"it opens with the auxiliary verb {first!r}, as a yes/no question does"
    if first in _WH_ALWAYS:
        return f"it opens with the interrogative {first!r}"
    if first in _WH_WITH_AUXILIARY and len(words) > 1:
        auxiliaries = _QUESTION_AUXILIARIES | {"will", "may", "must"}
        follows = words[1] in auxiliaries
        degree = first == "how" and len(words) > 2 and words[1] in _DEGREE_WORDS and words[2] in auxiliaries
        if follows or degree:
            return f"it opens with the interrogative {first!r} followed by an auxiliary verb"
    return None


def is_question(text: str) -> bool:
    """Whether ``text`` is a question, never a claim to judge (the rules: :func:`question_cue`)."""
    return question_cue(text) is not None


_TRAILING_PUNCTUATION = ".!?;:,…。！？"


def claim_key(text: str) -> str:
    """What makes two claims of a task the same claim: the text compared without case (Unicode case folding, after
    NFKC normalisation), with runs of whitespace as one space and no trailing punctuation. "Vitamin D  reduces
    falls." and "vitamin d reduces falls" share a key."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(folded.split()).rstrip(_TRAILING_PUNCTUATION + " ")
