"""Claim extraction from fragments by the LLM (JSON-schema constrained output)."""

from __future__ import annotations

from pathlib import Path

from lyra.ml.learned_rules import RuleSource
from lyra.ml.nli import prompt_environment
from lyra.ml.protocols import LLM
from lyra.sources.injection import Fence

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
    def __init__(self, llm: LLM, prompts_dir: Path, max_claims: int = 3, rules: RuleSource | None = None) -> None:
        """``rules``: the approved learned rules of ``claim_extraction``, read at every call."""
        self.llm = llm
        self.max_claims = max_claims
        self.rules = rules
        self._template = prompt_environment(prompts_dir).get_template("claim_extraction.j2")

    def extract(self, passage: str, topic: str) -> list[str]:
        """Claims in ``passage`` (untrusted: fenced with fresh random delimiters) relevant to ``topic``."""
        prompt = self._template.render(
            passage=passage,
            topic=topic,
            max_claims=self.max_claims,
            fence=Fence.new(),
            learned_rules=list(self.rules().guidelines) if self.rules else [],
        )
        data = self.llm.generate_json([{"role": "user", "content": prompt}], CLAIMS_SCHEMA, max_tokens=300)
        claims = data.get("claims", []) if isinstance(data, dict) else []
        out: list[str] = []
        for claim in claims:
            text = " ".join(str(claim).split())
            if 10 <= len(text) <= 300 and text not in out:
                out.append(text)
        return out[: self.max_claims]
