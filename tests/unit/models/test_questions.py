"""A question is never judged as a claim: the ``is_question`` rules, every request field that
takes a claim refusing a question by name, the last guard on what is written (``ClaimIn``), the LLM's answers that
are questions dropped, how ``lyra research`` gets its claims, and when a query job searches the academic APIs.

No I/O: the LLM here is a declared fake (:class:`ScriptedLLM`); tests/integration/pipeline/test_research_questions.py
runs the doors on the real Neo4j."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from lyra.core.errors import InvalidInputError
from lyra.core.text import is_question, question_cue
from lyra.ml.claims import ClaimExtractor
from lyra.ml.protocols import TokenChoice
from lyra.ml.question_claims import QuestionClaims
from lyra.models.api import CreateTaskRequest, TargetOptions
from lyra.models.graph import ClaimIn
from lyra.models.ingest import IngestRequest, ResearchRequest
from lyra.models.validation import parse_many, parse_one
from lyra.services.research import academic_search_decision, research_claims, skipped_academic

PROMPTS = Path(__file__).resolve().parents[3] / "config" / "prompts"
MICROCREDIT_QUESTION = "Does access to microcredit increase household consumption in poor rural households?"
MICROCREDIT_CLAIM = "Access to microcredit increases household consumption in poor rural households"


# ----------------------------------------------------------------------------- is_question
@pytest.mark.parametrize(
    "text",
    [
        MICROCREDIT_QUESTION,
        "Does access to microcredit increase household consumption? A randomized evaluation",
        "microcredit and consumption?",
        "Is vitamin D linked to fewer falls?",
        "Does access to microcredit increase household consumption",  # no question mark: the auxiliary tells
        "Can microcredit reduce poverty in Thai villages",
        "Why do microfinance borrowers default",
        "Which programmes raised consumption",
        "Who benefits from village funds",
        "What is the effect of microcredit on consumption",
        "How does microcredit change household spending",
        "How much does microcredit raise consumption",
        "When did the Thai village fund start",
        "Where is microcredit most effective",
        "Had the loans any effect",
        "Were the loans repaid on time",
        "¿Aumenta el microcrédito el consumo",
        'Is it "proven"?"',
        "Does it work？",
        "  does microcredit work  ",
    ],
)
def test_questions_are_recognised_by_their_mark_or_their_opening_word(text: str) -> None:
    assert is_question(text)
    assert question_cue(text)


@pytest.mark.parametrize(
    "text",
    [
        MICROCREDIT_CLAIM,
        "The Million Baht Village Fund program injected microcredit into Thai villages.",
        "When credit is cheap, households borrow more to smooth consumption.",
        "How much people earn depends on the village fund.",
        "What matters is the interest rate charged to borrowers.",
        "Where markets are thin, microcredit raises consumption less.",
        "Had the programme continued, consumption would have risen further.",
        "Should the fund close, borrowers would lose access to credit.",
        "Were rates lower, take-up would rise.",
        "May 2020 saw a fall in microcredit take-up.",
        "Will Smith's charity funds microcredit in Ghana.",
        "Whether microcredit helps the poorest remains contested.",
        "Microcredit does not increase consumption (is that a surprise? no).",
        "Isoniazid prevents tuberculosis in adults.",
        "Cancer incidence fell after the programme.",
        "",
        "   ",
    ],
)
def test_statements_are_not_questions(text: str) -> None:
    assert not is_question(text)
    assert question_cue(text) is None


# ----------------------------------------------------------------------------- every door refuses a question claim
def _refused(model: type[BaseModel], data: dict[str, Any]) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as caught:
        parse_one(model, data)
    return caught.value


def test_a_question_in_config_claims_is_refused_naming_the_field() -> None:
    error = _refused(
        CreateTaskRequest,
        {
            "hypothesis": MICROCREDIT_CLAIM,
            "config": {"claims": ["Microcredit raises consumption", MICROCREDIT_QUESTION]},
        },
    )
    assert error.field == "config.claims[1]"
    assert "is a question, not a claim" in error.reason and "question mark" in error.reason


def test_a_question_given_as_a_claim_to_ingest_or_research_is_refused_naming_the_field() -> None:
    ingest = _refused(IngestRequest, {"task_id": "tea", "paths": ["/tmp"], "claims": ["Is tea good for you"]})
    assert ingest.field == "claims[0]" and "auxiliary verb 'is'" in ingest.reason
    research = _refused(ResearchRequest, {"question": MICROCREDIT_QUESTION, "claims": ["Why does it work?"]})
    assert research.field == "claims[0]"


def test_a_question_may_name_a_task_or_a_research_request() -> None:
    assert parse_one(CreateTaskRequest, {"hypothesis": MICROCREDIT_QUESTION}).hypothesis == MICROCREDIT_QUESTION
    assert parse_one(ResearchRequest, {"question": MICROCREDIT_QUESTION}).claims == []
    ingest = parse_one(IngestRequest, {"task_id": "tea", "paths": ["/tmp"], "hypothesis": MICROCREDIT_QUESTION})
    assert ingest.hypothesis == MICROCREDIT_QUESTION


def test_no_write_of_a_claim_accepts_a_question_whatever_door_it_came_through() -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_many(ClaimIn, [{"text": MICROCREDIT_CLAIM}, {"text": MICROCREDIT_QUESTION}], "claims")
    assert caught.value.field == "claims[1].text" and "is a question" in caught.value.reason
    assert ClaimIn(text=MICROCREDIT_CLAIM).text == MICROCREDIT_CLAIM


# ----------------------------------------------------------------------------- the LLM's answers
class ScriptedLLM:
    """A declared fake LLM: ``generate_json`` answers with ``claims`` and records the prompts."""

    model_id = "fake"

    def __init__(self, claims: list[str]) -> None:
        self.claims = claims
        self.prompts: list[str] = []

    def choose(self, messages: Sequence[dict[str, str]], options: Sequence[str]) -> TokenChoice:
        raise AssertionError("not asked")

    def choose_raw(self, prompt: str, options: Sequence[str]) -> TokenChoice:
        raise AssertionError("not asked")

    def generate_json(self, messages: Sequence[dict[str, str]], schema: dict[str, Any], max_tokens: int = 512) -> Any:
        self.prompts.append(messages[-1]["content"])
        return {"claims": self.claims}


def test_a_question_becomes_the_llms_statements_and_an_answer_that_is_a_question_is_dropped() -> None:
    llm = ScriptedLLM([MICROCREDIT_CLAIM, "Does microcredit raise consumption?", MICROCREDIT_CLAIM, "short"])
    assert QuestionClaims(llm, PROMPTS).claims(MICROCREDIT_QUESTION) == [MICROCREDIT_CLAIM]
    assert MICROCREDIT_QUESTION in llm.prompts[0] and "never write a question" in llm.prompts[0]


def test_claim_extraction_from_a_passage_drops_answers_that_are_questions() -> None:
    llm = ScriptedLLM(["Do village funds raise consumption?", "Village funds raised consumption by 5 percent."])
    assert ClaimExtractor(llm, PROMPTS).extract("A passage.", "microcredit") == [
        "Village funds raised consumption by 5 percent."
    ]


# ----------------------------------------------------------------------------- lyra research's claims
def _no_llm(question: str) -> list[str]:
    raise AssertionError("the LLM must not be asked")


def test_research_on_a_question_judges_the_llms_claims_never_the_question() -> None:
    claims, source = research_claims(MICROCREDIT_QUESTION, [], [], lambda q: [MICROCREDIT_CLAIM, q])
    assert (claims, source) == ([MICROCREDIT_CLAIM], "llm")


def test_research_on_a_question_with_given_claims_judges_those_without_asking_the_llm() -> None:
    claims, source = research_claims(MICROCREDIT_QUESTION, [MICROCREDIT_CLAIM, MICROCREDIT_CLAIM], [], _no_llm)
    assert (claims, source) == ([MICROCREDIT_CLAIM], "given")


def test_research_continuing_a_task_adds_no_claim_it_holds_already() -> None:
    assert research_claims(MICROCREDIT_QUESTION, [], [MICROCREDIT_CLAIM], _no_llm) == ([], "existing")
    assert research_claims(MICROCREDIT_QUESTION, [MICROCREDIT_CLAIM], [MICROCREDIT_CLAIM], _no_llm) == ([], "given")


def test_research_on_a_statement_keeps_it_as_the_first_claim() -> None:
    assert research_claims(MICROCREDIT_CLAIM, [], [], _no_llm) == ([], "question")
    assert research_claims(MICROCREDIT_CLAIM, [MICROCREDIT_CLAIM, "Loans raise spending"], [], _no_llm) == (
        ["Loans raise spending"],
        "question",
    )


def test_research_on_a_question_the_llm_cannot_restate_is_refused_naming_claims() -> None:
    with pytest.raises(InvalidInputError) as caught:
        research_claims(MICROCREDIT_QUESTION, [], [], lambda q: ["Is it though?"])
    assert caught.value.field == "claims" and "--claim" in (caught.value.hint or "")


# ----------------------------------------------------------------------------- the academic search of a query job
def test_the_academic_search_runs_for_a_natural_question_by_default() -> None:
    # is_academic_query is false for both; the web read pages; the old rule skipped the academic APIs silently
    for query in (MICROCREDIT_QUESTION, "microcredit household consumption randomized evaluation"):
        wanted, why = academic_search_decision("always", query, web_pages=3)
        assert wanted and "always" in why


def test_auto_searches_an_academic_query_or_when_the_web_read_nothing_and_says_why_it_skipped() -> None:
    assert academic_search_decision("auto", "randomized trial of microcredit", web_pages=3)[0]
    wanted, why = academic_search_decision("auto", MICROCREDIT_QUESTION, web_pages=0)
    assert wanted and "read no page" in why
    wanted, why = academic_search_decision("auto", MICROCREDIT_QUESTION, web_pages=3)
    assert not wanted and "is_academic_query false" in why and "academic_search = always" in why
    wanted, why = academic_search_decision("off", "randomized trial", web_pages=0)
    assert not wanted and "off" in why


def test_a_skipped_academic_search_is_in_the_result_with_its_reason_and_as_a_warning() -> None:
    part = skipped_academic("because")
    assert part["searched"] is False and part["reason"] == "because"
    assert part["warnings"] == ["academic search skipped: because"] and part["seeds"] == []


def test_target_options_take_the_academic_search_mode_and_refuse_others_by_name() -> None:
    assert parse_one(TargetOptions, {"academic_search": "auto", "web_search": False}).academic_search == "auto"
    assert parse_one(TargetOptions, {}).academic_search is None
    error = _refused(TargetOptions, {"academic_search": "sometimes"})
    assert error.field == "academic_search"
