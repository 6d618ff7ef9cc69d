"""Stage 2 of citation expansion: how useful a paper's title and abstract look for the task's topics (its claims,
and the query of a query job), as a number in 0..1, and how well a rater separates labelled papers.

Raters (``LYRA_CITATION_STAGE2_RATER``):

* ``ranker`` (the default): the :class:`~lyra.ml.ranking.CandidateRanker`'s fused ``0.3·BM25 + 0.7·cosine`` score,
  best over the topics, BM25 normalised over the papers rated together (so a score depends on its batch); no LLM
  call. It separates relevant from off-topic papers best on the labelled set (docs/guides/academic.md).
* ``embedding``: the largest cosine between the paper (``title. abstract``) and any topic, clipped to 0..1 (the
  offline MiniLM embedder; no LLM call).
* ``llm-yes-no``: the local LLM is asked whether the paper reports findings that bear on a claim
  (``citation_relevance.j2``); the score is its probability of "yes" read from the first token.
* ``llm-scale``: the local LLM rates usefulness 0-10 as JSON (``citation_usefulness.j2``); unparsable → 0.5. The
  earlier default rater: it gave 5 to nearly everything.

:func:`evaluate_rater` measures one on labelled pairs (``lyra eval usefulness``, ``tests/data/usefulness_pairs.jsonl``):
the area under the ROC curve of relevant against off-topic, against on-topic-but-undecisive, and against both.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import numpy as np
from jinja2 import Template
from pydantic import BaseModel

from lyra.core.errors import InvalidInputError, LyraError
from lyra.ml.learned_rules import RuleSource
from lyra.ml.nli import prompt_environment
from lyra.ml.protocols import LLM, Embedder, FloatArray
from lyra.ml.ranking import CandidateRanker
from lyra.sources.injection import Fence

log = logging.getLogger(__name__)

RaterName = Literal["embedding", "ranker", "llm-yes-no", "llm-scale"]
RATERS: tuple[RaterName, ...] = ("embedding", "ranker", "llm-yes-no", "llm-scale")
UsefulnessLabel = Literal["relevant", "on_topic", "off_topic"]
USEFULNESS_SCHEMA = {
    "type": "object",
    "properties": {"usefulness": {"type": "integer", "minimum": 0, "maximum": 10}},
    "required": ["usefulness"],
}
UNPARSABLE_USEFULNESS = 0.5  # what an LLM rater's unusable answer counts as
YES_NO = ("yes", "no")


@dataclass(frozen=True)
class PaperText:
    """What a rater reads of a paper."""

    title: str
    abstract: str

    def text(self) -> str:
        return f"{self.title}. {self.abstract}"


class UsefulnessRater(Protocol):
    name: str
    calls_llm: bool  # one LLM call per paper rated
    batch_dependent: bool  # a paper's score depends on the other papers rated with it

    def rate(self, papers: Sequence[PaperText], topics: Sequence[str]) -> list[float]:
        """A score in 0..1 for each paper (higher: more useful for the topics), in the order of ``papers``."""
        ...


def _unit(vectors: FloatArray) -> FloatArray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.asarray(vectors / np.where(norms == 0, 1.0, norms), dtype=np.float32)


def _topics(topics: Sequence[str]) -> list[str]:
    return [t for t in topics if t.strip()]


class EmbeddingRater:
    """The largest cosine between a paper and any topic, clipped to 0..1; 0.5 for every paper without topics."""

    name = "embedding"
    calls_llm = False
    batch_dependent = False

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def rate(self, papers: Sequence[PaperText], topics: Sequence[str]) -> list[float]:
        refs = _topics(topics)
        if not papers:
            return []
        if not refs:
            return [0.5] * len(papers)
        vectors = _unit(np.asarray(self.embedder.embed([p.text() for p in papers] + refs), dtype=np.float32))
        cosines = vectors[: len(papers)] @ vectors[len(papers) :].T
        return [float(v) for v in np.clip(cosines.max(axis=1), 0.0, 1.0)]


class RankerRater:
    """The candidate ranker's fused BM25 + cosine score (no category weights), the best over the topics."""

    name = "ranker"
    calls_llm = False
    batch_dependent = True

    def __init__(self, embedder: Embedder, ranker: CandidateRanker) -> None:
        self.embedder = embedder
        self.ranker = ranker

    def rate(self, papers: Sequence[PaperText], topics: Sequence[str]) -> list[float]:
        refs = _topics(topics)
        if not papers:
            return []
        if not refs:
            return [0.5] * len(papers)
        texts = [p.text() for p in papers]
        vectors = _unit(np.asarray(self.embedder.embed(texts + refs), dtype=np.float32))
        best = np.zeros(len(papers), dtype=np.float64)
        for k, topic in enumerate(refs):
            for c in self.ranker.rank(topic, vectors[len(papers) + k], texts, vectors[: len(papers)], len(papers)):
                best[c.index] = max(best[c.index], c.score)
        return [float(v) for v in np.clip(best, 0.0, 1.0)]


class _LLMRater:
    """Shared by the two LLM raters: the prompt (with the approved learned rules of ``citation_usefulness``)."""

    calls_llm = True
    batch_dependent = False
    template_name = ""

    def __init__(
        self, llm: LLM, prompts_dir: Path, abstract_chars: int = 1500, rules: RuleSource | None = None
    ) -> None:
        self.llm = llm
        self.abstract_chars = abstract_chars
        self.rules = rules
        self._template: Template = prompt_environment(prompts_dir).get_template(self.template_name)

    def prompt(self, paper: PaperText, topics: Sequence[str]) -> str:
        refs = _topics(topics)
        return self._template.render(
            question=refs[0] if refs else "",
            claims=list(refs[1:4]),
            title=paper.title,
            abstract=paper.abstract[: self.abstract_chars],
            fence=Fence.new(),
            learned_rules=list(self.rules().guidelines) if self.rules else [],
        )

    def rate(self, papers: Sequence[PaperText], topics: Sequence[str]) -> list[float]:
        return [self.rate_one(p, topics) for p in papers]

    def rate_one(self, paper: PaperText, topics: Sequence[str]) -> float:
        raise NotImplementedError


class LLMScaleRater(_LLMRater):
    """The LLM's 0-10 usefulness as JSON, divided by 10; 0.5 when the answer is unusable."""

    name = "llm-scale"
    template_name = "citation_usefulness.j2"

    def rate_one(self, paper: PaperText, topics: Sequence[str]) -> float:
        messages = [{"role": "user", "content": self.prompt(paper, topics)}]
        try:
            answer = self.llm.generate_json(messages, USEFULNESS_SCHEMA, max_tokens=16)
        except LyraError as exc:
            log.warning(
                "usefulness of %r not rated (%s); counted as %.1f", paper.title[:60], exc, UNPARSABLE_USEFULNESS
            )
            return UNPARSABLE_USEFULNESS
        value = answer.get("usefulness") if isinstance(answer, dict) else None
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 10:
            return UNPARSABLE_USEFULNESS
        return float(value) / 10.0


class LLMYesNoRater(_LLMRater):
    """The LLM's probability of "yes" to: does this paper report findings that bear on one of the claims?"""

    name = "llm-yes-no"
    template_name = "citation_relevance.j2"

    def rate_one(self, paper: PaperText, topics: Sequence[str]) -> float:
        messages = [{"role": "user", "content": self.prompt(paper, topics)}]
        try:
            choice = self.llm.choose(messages, YES_NO)
        except LyraError as exc:
            log.warning("relevance of %r not asked (%s); counted as 0.5", paper.title[:60], exc)
            return UNPARSABLE_USEFULNESS
        return float(choice.probs.get("yes", UNPARSABLE_USEFULNESS))


def build_rater(
    name: str,
    embedder: Embedder,
    llm: Callable[[], LLM | None],
    prompts_dir: Path,
    *,
    ranker: CandidateRanker | None = None,
    abstract_chars: int = 1500,
    rules: RuleSource | None = None,
) -> UsefulnessRater | None:
    """The rater called ``name``; None for an LLM rater when no LLM is configured (``llm()`` gives None)."""
    if name == "embedding":
        return EmbeddingRater(embedder)
    if name == "ranker":
        return RankerRater(embedder, ranker or CandidateRanker())
    if name in ("llm-yes-no", "llm-scale"):
        model = llm()
        if model is None:
            return None
        cls = LLMYesNoRater if name == "llm-yes-no" else LLMScaleRater
        return cls(model, prompts_dir, abstract_chars, rules)
    raise InvalidInputError("rater", f"unknown Stage-2 rater {name!r}; choose one of {', '.join(RATERS)}")


# ------------------------------------------------------------------------------------------------ measurement
class MemoEmbedder:
    """An embedder that embeds each distinct text once (the measurement rates the same papers against several
    claims; Stage 2 embeds each paper once per seed)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self._seen: dict[str, FloatArray] = {}

    def embed(self, texts: Sequence[str]) -> FloatArray:
        new = list(dict.fromkeys(t for t in texts if t not in self._seen))
        if new:
            for text, vector in zip(new, np.asarray(self.inner.embed(new), dtype=np.float32), strict=True):
                self._seen[text] = vector
        self.dimension = self.inner.dimension
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._seen[t] for t in texts])


class UsefulnessPair(BaseModel):
    """A line of ``tests/data/usefulness_pairs.jsonl`` (built by ``scripts/build_usefulness_set.py``)."""

    id: str
    split: Literal["dev", "test"]
    label: UsefulnessLabel
    claim: str
    title: str
    abstract: str
    source: str = ""

    def paper(self) -> PaperText:
        return PaperText(self.title, self.abstract)


class RaterEvaluation(BaseModel):
    rater: str
    pairs: int
    by_label: dict[str, int]
    auc_relevant_vs_off_topic: float | None
    auc_relevant_vs_on_topic: float | None
    auc_relevant_vs_rest: float | None
    mean_score: dict[str, float]  # per label
    distinct_scores: int  # how many different values the rater gave (1: rates everything alike)
    seconds: float
    seconds_per_pair: float


def load_usefulness_pairs(path: Path) -> list[UsefulnessPair]:
    if not path.is_file():
        raise InvalidInputError("set", f"no labelled set at {path}")
    pairs: list[UsefulnessPair] = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                pairs.append(UsefulnessPair.model_validate(json.loads(line)))
            except ValueError as exc:
                raise InvalidInputError("set", f"{path}:{n}: {exc}") from None
    return pairs


def select_pairs(
    pairs: Sequence[UsefulnessPair], split: str = "test", per_label: dict[str, int] | None = None
) -> list[UsefulnessPair]:
    """The pairs of ``split`` (``all``: every pair); with ``per_label``, the first N of each label in file order."""
    chosen = [p for p in pairs if split == "all" or p.split == split]
    if per_label is None:
        return chosen
    taken: dict[str, int] = defaultdict(int)
    out = []
    for p in chosen:
        if taken[p.label] < per_label.get(p.label, 0):
            taken[p.label] += 1
            out.append(p)
    return out


def roc_auc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    """P(a positive scores above a negative), ties counting half (Mann-Whitney); None when a side is empty."""
    if not positives or not negatives:
        return None
    pos = np.asarray(positives, dtype=np.float64)[:, None]
    neg = np.asarray(negatives, dtype=np.float64)[None, :]
    return float(((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (pos.size * neg.size))


def score_pairs(
    rater: UsefulnessRater,
    pairs: Sequence[UsefulnessPair],
    batch_size: int = 30,
    progress: Callable[[int], None] | None = None,
) -> list[float]:
    """Each pair's score, its claim as the only topic. Pairs are rated claim by claim; a batch-dependent rater gets
    each claim's papers together with other papers of the set up to ``batch_size`` (like Stage 1's cut of 30)."""
    by_claim: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(pairs):
        by_claim[p.claim].append(i)
    papers = [p.paper() for p in pairs]
    scores = [0.0] * len(pairs)
    for claim, idx in by_claim.items():
        batch = [papers[i] for i in idx]
        if rater.batch_dependent:
            others = [j for j in range(len(pairs)) if pairs[j].claim != claim]
            random.Random(claim).shuffle(others)
            batch += [papers[j] for j in others[: max(batch_size - len(idx), 0)]]
        got = rater.rate(batch, [claim])
        for i, score in zip(idx, got, strict=False):
            scores[i] = score
        if progress:
            progress(len(idx))
    return scores


def evaluate_rater(
    rater: UsefulnessRater,
    pairs: Sequence[UsefulnessPair],
    progress: Callable[[int], None] | None = None,
) -> RaterEvaluation:
    start = time.perf_counter()
    scores = score_pairs(rater, pairs, progress=progress)
    seconds = time.perf_counter() - start
    by: dict[str, list[float]] = defaultdict(list)
    for p, s in zip(pairs, scores, strict=True):
        by[p.label].append(s)
    relevant, on_topic, off_topic = by["relevant"], by["on_topic"], by["off_topic"]
    return RaterEvaluation(
        rater=rater.name,
        pairs=len(pairs),
        by_label={k: len(v) for k, v in sorted(by.items())},
        auc_relevant_vs_off_topic=roc_auc(relevant, off_topic),
        auc_relevant_vs_on_topic=roc_auc(relevant, on_topic),
        auc_relevant_vs_rest=roc_auc(relevant, on_topic + off_topic),
        mean_score={k: float(np.mean(v)) for k, v in sorted(by.items())},
        distinct_scores=len({round(s, 6) for s in scores}),
        seconds=seconds,
        seconds_per_pair=seconds / len(pairs) if pairs else 0.0,
    )
