"""The push door's pure parts: reading a client model's answer, the token estimator, the judge name, the user
message. No MCP, no Neo4j."""

from __future__ import annotations

import pytest

from lyra.models.judging import (
    DEFAULT_SAMPLED_CONFIDENCE,
    RATIONALE_MAX,
    estimate_tokens,
    parse_sampled_verdict,
    sampling_user_message,
)
from lyra.services.judging import sampling_judge


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"relation": "SUPPORTS", "confidence": 0.9, "rationale": "the trial says so"}',
            ("SUPPORTS", 0.9, "the trial says so"),
        ),
        ('Here you go: {"relation": "refutes", "confidence": 0.25} done', ("REFUTES", 0.25, None)),
        ('{"label": "Neutral", "confidence": "0.6"}', ("NEUTRAL", 0.6, None)),
        ('{"relation": "SUPPORTS", "confidence": 7}', ("SUPPORTS", DEFAULT_SAMPLED_CONFIDENCE, None)),
        ('{"relation": "SUPPORTS", "confidence": "NaN"}', ("SUPPORTS", DEFAULT_SAMPLED_CONFIDENCE, None)),
        ("REFUTES 0.8 the trial found more falls", ("REFUTES", 0.8, "the trial found more falls")),
        ("**supports**: 1 clear effect", ("SUPPORTS", 1.0, "clear effect")),
        ("NEUTRAL", ("NEUTRAL", DEFAULT_SAMPLED_CONFIDENCE, None)),
        (
            "  Refutes.  because the effect was reversed",
            ("REFUTES", DEFAULT_SAMPLED_CONFIDENCE, "because the effect was reversed"),
        ),
    ],
)
def test_an_answer_with_a_label_of_the_set_is_read(text: str, expected: tuple[str, float, str | None]) -> None:
    assert parse_sampled_verdict(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "I think it probably does, maybe; MAYBE 0.7",
        "YES 0.9",
        "SUPPORTSX 0.9",
        '{"relation": "CONTRADICTS", "confidence": 0.9}',
        '{"relation": 1, "confidence": 0.9}',
        '{"confidence": 0.9, "rationale": "SUPPORTS"}',  # a JSON object without a label is not read as text
        "The passage SUPPORTS the claim",  # the label must open the answer
    ],
)
def test_an_answer_without_a_label_of_the_set_is_none(text: str) -> None:
    assert parse_sampled_verdict(text) is None


def test_a_long_rationale_is_cut_to_the_limit() -> None:
    parsed = parse_sampled_verdict('{"relation": "NEUTRAL", "rationale": "' + "x" * 900 + '"}')
    assert parsed is not None and parsed[2] is not None and len(parsed[2]) == RATIONALE_MAX


@pytest.mark.parametrize(("text", "tokens"), [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100)])
def test_tokens_are_estimated_as_characters_over_four_rounded_up(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def test_the_judge_names_the_client_and_the_model_the_answer_gave() -> None:
    assert sampling_judge("claude-ai", "claude-sonnet-4") == "assistant:claude-ai/claude-sonnet-4"
    assert sampling_judge("c", "Qwen/Qwen2.5:Q4_K_M") == "assistant:c/Qwen/Qwen2.5:Q4_K_M"
    assert sampling_judge("c", "evil\nmodel; DROP") == "assistant:c/evil-model-DROP"
    assert sampling_judge("c", " \n/") == "assistant:c/unknown-model"
    assert len(sampling_judge("c", "m" * 500)) == len("assistant:c/") + 80


def test_the_user_message_carries_the_claim_the_fence_and_the_flag() -> None:
    fence = ["<<OPEN>>", "<</OPEN>>"]
    plain = sampling_user_message("Claim text.", "<<OPEN>>\npassage\n<</OPEN>>", fence, flagged=False)
    marked = sampling_user_message("Claim text.", "<<OPEN>>\npassage\n<</OPEN>>", fence, flagged=True)
    assert plain.startswith("Claim: Claim text.\n") and "<<OPEN>> and <</OPEN>>" in plain
    assert "flagged" not in plain and "flagged" in marked
