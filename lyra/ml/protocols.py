"""Small interfaces for the heavy models. Implementations import their libraries lazily."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

NLILabelName = Literal["entailment", "contradiction", "neutral"]
LABELS: tuple[NLILabelName, ...] = ("entailment", "contradiction", "neutral")
FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True)
class NLIResult:
    """One judged (premise, hypothesis) pair: the label and a probability for each of the three labels."""

    label: NLILabelName
    probs: dict[str, float]
    method: str = ""  # how the judge decided (e.g. "llm", "relevance_gate"), for traceability
    sentence: str | None = None  # the premise's sentence the judge found most decisive, when it reads sentences

    @property
    def confidence(self) -> float:
        return self.probs[self.label]


@runtime_checkable
class Embedder(Protocol):
    model_id: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """L2-normalised embeddings, shape (len(texts), dimension)."""
        ...


@runtime_checkable
class NLIJudge(Protocol):
    @property
    def model_id(self) -> str:
        """What the verdicts depend on (model, configuration, prompts, learned rules): the cache key."""
        ...

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        """Judge (premise, hypothesis) pairs."""
        ...


@dataclass(frozen=True)
class TokenChoice:
    """The probability the model gave each allowed option at a constrained decision point."""

    text: str
    probs: dict[str, float]


@runtime_checkable
class LLM(Protocol):
    model_id: str

    def choose(self, messages: Sequence[dict[str, str]], options: Sequence[str]) -> TokenChoice:
        """Answer with exactly one of ``options``; return the model's probability for each option."""
        ...

    def choose_raw(self, prompt: str, options: Sequence[str]) -> TokenChoice:
        """Continue a plain-text prompt by one token; probability of each option."""
        ...

    def generate_json(self, messages: Sequence[dict[str, str]], schema: dict[str, Any], max_tokens: int = 512) -> Any:
        """Generate JSON that conforms to ``schema`` (grammar-constrained) and return it parsed."""
        ...


@runtime_checkable
class Reranker(Protocol):
    model_id: str

    def score(self, query: str, documents: Sequence[str]) -> list[float]: ...
