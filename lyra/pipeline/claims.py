"""Claim extraction from fragments by the LLM (JSON-schema constrained output)."""

from __future__ import annotations

import secrets
from pathlib import Path

from lyra.ml.nli import prompt_environment
from lyra.ml.protocols import LLM

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
    def __init__(self, llm: LLM, prompts_dir: Path, max_claims: int = 3) -> None:
        self.llm = llm
        self.max_claims = max_claims
        self._template = prompt_environment(prompts_dir).get_template("claim_extraction.j2")
        token = secrets.token_hex(4)
        self._open, self._close = f"<<passage-{token}>>", f"<</passage-{token}>>"

    def extract(self, passage: str, topic: str) -> list[str]:
        clean = passage.replace(self._open, "").replace(self._close, "")
        prompt = self._template.render(
            passage=clean, topic=topic, max_claims=self.max_claims, open_tag=self._open, close_tag=self._close
        )
        data = self.llm.generate_json([{"role": "user", "content": prompt}], CLAIMS_SCHEMA, max_tokens=300)
        claims = data.get("claims", []) if isinstance(data, dict) else []
        out: list[str] = []
        for claim in claims:
            text = " ".join(str(claim).split())
            if 10 <= len(text) <= 300 and text not in out:
                out.append(text)
        return out[: self.max_claims]
