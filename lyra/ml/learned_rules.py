"""Learned rules as a model component sees them: the approved, active rules of one component at one rule-set version.

The learning loop (:mod:`lyra.services.learning`) decides which rules are active; a component only reads them
through a :data:`RuleSource` each time it builds a prompt, so an approval or a retirement takes effect at the next
judgement without a restart. The version is part of every judge id that depends on the rules, so cached verdicts
of another rule set are never reused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# The components whose prompts or training data the learning loop may change.
STANCE_LLM = "stance_llm"  # the LLM's yes/no stance questions (the `llm` judge, and the default judge's second opinion)
STANCE_TRAINED = "stance_trained"  # the trained network's training data (deployed by `lyra train stance`)
CLAIM_EXTRACTION = "claim_extraction"
CITATION_USEFULNESS = "citation_usefulness"
CITATION_DETECTION = "citation_detection"
EVIDENCE_RANKING = "evidence_ranking"  # how candidate passages and web results are ranked (CONSTRAINT rules)
COMPONENTS = (
    STANCE_LLM, STANCE_TRAINED, CLAIM_EXTRACTION, CITATION_USEFULNESS, CITATION_DETECTION, EVIDENCE_RANKING,
)  # fmt: skip


@dataclass(frozen=True)
class LearnedRules:
    """Active rules of one component. ``version`` 0 means no rule was ever activated (the base prompt)."""

    component: str
    version: int = 0
    guidelines: tuple[str, ...] = ()
    examples: tuple[dict[str, str], ...] = field(default_factory=tuple)  # few-shot examples, the template's keys
    constraints: tuple[dict[str, str], ...] = field(default_factory=tuple)  # CONSTRAINT rules read as data

    @property
    def empty(self) -> bool:
        return not self.guidelines and not self.examples and not self.constraints

    def fingerprint(self) -> str:
        """A hash of exactly what the rules put into a prompt (two versions with the same content hash alike)."""
        content: dict[str, Any] = {"g": list(self.guidelines), "e": list(self.examples)}
        if self.constraints:
            content["c"] = list(self.constraints)
        body = json.dumps(content, sort_keys=True)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()[:10]

    def tag(self) -> str:
        """What a judge id carries: ``rules:<component>@v<version>:<fingerprint>`` ('' when empty)."""
        return "" if self.empty else f"rules:{self.component}@v{self.version}:{self.fingerprint()}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "version": self.version,
            "guidelines": list(self.guidelines),
            "examples": list(self.examples),
            "constraints": list(self.constraints),
        }


RuleSource = Callable[[], LearnedRules]


def no_rules(component: str) -> RuleSource:
    empty = LearnedRules(component)
    return lambda: empty


def fixed_rules(rules: LearnedRules) -> RuleSource:
    return lambda: rules


def domain_penalties(rules: LearnedRules) -> dict[str, float]:
    """The ranking factor of each domain an active ``evidence_ranking`` CONSTRAINT names (``{"domain", "factor"}``;
    the smallest factor when several name one domain). A domain not named ranks as before (factor 1)."""
    out: dict[str, float] = {}
    for constraint in rules.constraints:
        domain = str(constraint.get("domain", "")).strip().lower()
        try:
            factor = float(constraint.get("factor", 1.0))
        except ValueError:
            continue
        if domain and 0.0 <= factor <= 1.0:
            out[domain] = min(factor, out.get(domain, 1.0))
    return out
