"""Claim extraction from fragments by the LLM (JSON-schema constrained output)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from lyra.core.text import is_question
from lyra.ml.learned_rules import LearnedRules, RuleSource
from lyra.ml.nli import prompt_environment
from lyra.ml.protocols import LLM
from lyra.sources.injection import Fence

log = logging.getLogger(__name__)
SAME_REJECTED_CLAIM = 0.95  # cosine at which an extracted claim is a rejected one again (reworded at most slightly)

CLAIMS_SCHEMA = {
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            "items": {"type": "string", "minLength": 10, "maxLength": 300},
            "maxItems": 5,
        }
    },
    "required": ["claims"],
}


class ClaimExtractor:
    def __init__(
        self,
        llm: LLM,
        prompts_dir: Path,
        max_claims: int = 3,
        rules: RuleSource | None = None,
        embed: Callable[[Sequence[str]], np.ndarray] | None = None,
    ) -> None:
        """``rules``: the approved learned rules of ``claim_extraction``, read at every call: guidelines (in the
        prompt), and claims reviewers rejected (``{claim, reason}``), which are dropped from the LLM's answers: the
        same text, or with ``embed`` (L2-normalised embeddings) a claim at cosine >= ``SAME_REJECTED_CLAIM`` to one.
        They are not shown to the LLM: shown as what not to extract, the offline LLM copied them into its answers."""
        self.llm = llm
        self.embed = embed
        self.max_claims = max_claims
        self.rules = rules
        self._template = prompt_environment(prompts_dir).get_template("claim_extraction.j2")

    @property
    def rules_version(self) -> int:
        """The claim-extraction rule-set version the next extraction reads (0: the base prompt)."""
        return self.rules().version if self.rules else 0

    def extract(self, passage: str, topic: str) -> list[str]:
        """Claims in ``passage`` (untrusted: fenced with fresh random delimiters) relevant to ``topic``, under the
        rules in force."""
        rules = self.rules() if self.rules else None
        return self.keep(self.ask(passage, topic, rules), rules)

    def ask(self, passage: str, topic: str, rules: LearnedRules | None) -> list[str]:
        """The LLM's distinct, well-sized claims for ``passage`` under ``rules``' prompt (no rejected claim dropped;
        an answer that is a question is dropped, as no door stores a question as a claim)."""
        prompt = self._template.render(
            passage=passage,
            topic=topic,
            max_claims=self.max_claims,
            fence=Fence.new(),
            learned_rules=list(rules.guidelines) if rules else [],
        )
        data = self.llm.generate_json([{"role": "user", "content": prompt}], CLAIMS_SCHEMA, max_tokens=300)
        claims = data.get("claims", []) if isinstance(data, dict) else []
        out: list[str] = []
        for claim in claims:
            text = " ".join(str(claim).split())
            if 10 <= len(text) <= 300 and text not in out and not is_question(text):  # a question is never a claim
                out.append(text)
        return out

    def keep(self, claims: list[str], rules: LearnedRules | None) -> list[str]:
        """``claims`` less the rejected ones of ``rules``, at most ``max_claims``."""
        if rules and rules.examples and claims:
            claims = self._without_rejected(claims, [str(ex["claim"]) for ex in rules.examples])
        return claims[: self.max_claims]

    def _without_rejected(self, claims: list[str], rejected: list[str]) -> list[str]:
        """``claims`` less those that are a rejected claim again (the same text, or with ``embed`` a near-duplicate)."""
        if self.embed is None:
            known = {" ".join(r.casefold().split()) for r in rejected}
            return [c for c in claims if " ".join(c.casefold().split()) not in known]
        vectors = np.asarray(self.embed([*claims, *rejected]), dtype=float)
        scores = vectors[: len(claims)] @ vectors[len(claims) :].T
        kept = [c for c, row in zip(claims, scores, strict=True) if float(row.max()) < SAME_REJECTED_CLAIM]
        if len(kept) < len(claims):
            log.info("claim extraction: %d claim(s) dropped as rejected ones again", len(claims) - len(kept))
        return kept
