"""A research question turned into claims by the LLM (decision record 0010): the stance judge is only ever asked about
statements, so ``lyra research "Does X increase Y?"`` judges "X increases Y." and never the question itself."""

from __future__ import annotations

import logging
from pathlib import Path

from lyra.core.text import is_question
from lyra.ml.nli import prompt_environment
from lyra.ml.protocols import LLM

log = logging.getLogger(__name__)

QUESTION_CLAIMS_SCHEMA = {
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            "items": {"type": "string", "minLength": 10, "maxLength": 300},
            "minItems": 1,
            "maxItems": 5,
        }
    },
    "required": ["claims"],
}


class QuestionClaims:
    """Asks the LLM for the claims that answer a question (``config/prompts/question_claims.j2``)."""

    def __init__(self, llm: LLM, prompts_dir: Path, max_claims: int = 2) -> None:
        self.llm = llm
        self.max_claims = max_claims
        self._template = prompt_environment(prompts_dir).get_template("question_claims.j2")

    def claims(self, question: str) -> list[str]:
        """At most ``max_claims`` distinct statements of 10-300 characters; an answer that is still a question is
        dropped (the caller says what to do when none is left)."""
        prompt = self._template.render(question=" ".join(question.split()), max_claims=self.max_claims)
        data = self.llm.generate_json([{"role": "user", "content": prompt}], QUESTION_CLAIMS_SCHEMA, max_tokens=200)
        answers = data.get("claims", []) if isinstance(data, dict) else []
        out: list[str] = []
        for answer in answers:
            text = " ".join(str(answer).split())
            if not 10 <= len(text) <= 300 or text in out:
                continue
            if is_question(text):
                log.info("question to claims: the LLM answered with a question again; dropped: %r", text)
                continue
            out.append(text)
        return out[: self.max_claims]
