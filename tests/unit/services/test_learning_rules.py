"""The learning loop's deterministic parts: the evaluator's classification rules, the conflict check, the approval
rules, and the learned rules in the stance LLM's prompt and id. Declared fakes stand in for the models (no weights,
no Neo4j)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lyra.core.errors import ConflictError, InvalidInputError
from lyra.ml.cache import AnswerCache, CachedJudge, NLICache
from lyra.ml.claims import ClaimExtractor
from lyra.ml.learned_rules import STANCE_LLM, LearnedRules
from lyra.ml.nli import LLMStanceJudge, StanceJudgeConfig, prompt_environment
from lyra.ml.protocols import TokenChoice
from lyra.services.learning_rules import (
    STANCE_GUIDELINES,
    ActiveRuleFacts,
    ApprovalFacts,
    RecordFacts,
    check_approval,
    classify,
    conflicts,
    reverse_pattern,
    takes_effect,
)
from lyra.sources.injection import Fence

PROMPTS = Path(__file__).resolve().parents[3] / "config" / "prompts"


def correction(
    n: int,
    predicted: str = "entailment",
    correct: str = "neutral",
    reviewer: str = "ana",
    task: str = "t1",
    claim: str | None = None,
    edge: str | None = None,
) -> RecordFacts:
    return RecordFacts(
        id=f"fbr_{n}",
        kind="correction",
        component="stance",
        task_id=task,
        reviewer_id=reviewer,
        edge_id=edge or f"edg_{n}",
        claim_id=claim or f"clm_{n}",
        predicted_label=predicted,
        correct_label=correct,
    )


# ----------------------------------------------------------------------------- evaluator
def test_a_kept_label_is_a_positive_record() -> None:
    record = RecordFacts("fbr_1", "confirmation", "stance", "t1", "ana", "edg_1", "clm_1", "entailment", "entailment")
    result = classify(record, [correction(2)])
    assert result.classification == "positive"
    assert "kept" in result.rationale


def test_the_first_correction_of_its_kind_is_an_edge_case() -> None:
    result = classify(correction(1), [correction(2, "neutral", "contradiction")])
    assert result.classification == "edge_case"
    assert "first correction entailment->neutral" in result.rationale


def test_a_recurring_pattern_is_generalizable_low() -> None:
    result = classify(correction(3), [correction(1), correction(2)])
    assert result.classification == "generalizable_low"
    assert result.rationale.startswith("recurring: 3 corrections entailment->neutral on 3 claims")


def test_a_widespread_pattern_across_claims_is_generalizable_high_and_more_reviewers_raise_confidence() -> None:
    history = [correction(i) for i in range(1, 5)]
    one_reviewer = classify(correction(5), history, high_min=5)
    assert one_reviewer.classification == "generalizable_high"
    mixed = [correction(i, reviewer="bo" if i % 2 else "ana", task=f"t{i}") for i in range(1, 5)]
    two_reviewers = classify(correction(5), mixed, high_min=5)
    assert two_reviewers.classification == "generalizable_high"
    assert two_reviewers.confidence > one_reviewer.confidence


def test_many_corrections_of_one_claim_stay_low_not_high() -> None:
    history = [correction(i, claim="clm_same") for i in range(1, 6)]
    result = classify(correction(6, claim="clm_same"), history, high_min=5)
    assert result.classification == "generalizable_low"


def test_reviewers_disagreeing_on_the_same_edge_make_it_ambiguous() -> None:
    earlier = correction(1, predicted="entailment", correct="contradiction", reviewer="bo", edge="edg_x")
    result = classify(correction(2, reviewer="ana", edge="edg_x"), [earlier, correction(3)])
    assert result.classification == "ambiguous"
    assert "bo: contradiction" in result.rationale and "ana: neutral" in result.rationale


def test_a_near_identical_context_with_another_label_is_ambiguous_but_a_merely_similar_one_is_not() -> None:
    other = correction(7, predicted="entailment", correct="contradiction", reviewer="bo")
    assert classify(correction(1), [], similar=[(other, 0.97)]).classification == "ambiguous"
    result = classify(correction(1), [], similar=[(other, 0.85)])
    assert result.classification == "edge_case"
    assert result.similar_ids == ("fbr_7",)


def test_claim_and_domain_feedback_is_kept_for_audit_only() -> None:
    record = RecordFacts("fbr_1", "domain_rule", "domain_policy", "t1", "ana")
    assert classify(record, []).classification == "edge_case"


# ----------------------------------------------------------------------------- conflicts
def test_a_rule_pulling_the_opposite_way_is_a_conflict_and_the_same_pattern_is_not() -> None:
    active = [
        ActiveRuleFacts("lrl_1", STANCE_LLM, "GUIDELINE", "stance:neutral->entailment", "rule one"),
        ActiveRuleFacts("lrl_2", STANCE_LLM, "GUIDELINE", "stance:contradiction->neutral", "rule two"),
        ActiveRuleFacts("lrl_3", "claim_extraction", "GUIDELINE", "stance:neutral->entailment", "elsewhere"),
    ]
    found = conflicts(STANCE_LLM, "stance:entailment->neutral", active)
    assert [(rule.id, reason) for rule, reason in found] == [
        ("lrl_1", "the active rule corrects neutral->entailment, this one entailment->neutral")
    ]
    assert conflicts(STANCE_LLM, "stance:contradiction->neutral", active) == []


def test_every_pattern_has_a_guideline_and_its_reverse_exists() -> None:
    assert len(STANCE_GUIDELINES) == 6
    assert all(reverse_pattern(key) in STANCE_GUIDELINES for key in STANCE_GUIDELINES)


# ----------------------------------------------------------------------------- approval
def facts(**changes: Any) -> ApprovalFacts:
    base: dict[str, Any] = {"id": "prp_1", "status": "pending", "rule_type": "GUIDELINE", "approvers": frozenset()}
    return ApprovalFacts(**{**base, **changes})


def test_one_reviewer_cannot_approve_twice() -> None:
    check_approval(facts(), "ana", None)
    with pytest.raises(ConflictError, match="ana already approved"):
        check_approval(facts(approvers=frozenset({"ana"})), "ana", None)
    check_approval(facts(approvers=frozenset({"ana"})), "bo", None)


def test_one_approval_takes_effect_only_with_an_override_reason() -> None:
    assert not takes_effect(1, 2, None)
    assert takes_effect(2, 2, None)
    assert takes_effect(1, 2, "urgent: the judge keeps failing on the review queue")


def test_a_decided_proposal_cannot_be_approved() -> None:
    with pytest.raises(ConflictError, match="is rejected, not pending"):
        check_approval(facts(status="rejected"), "ana", None)


def test_a_conflicting_or_unmeasured_proposal_needs_an_override_reason() -> None:
    with pytest.raises(InvalidInputError) as raised:
        check_approval(facts(conflicts=("lrl_1: pulls the other way",)), "ana", None)
    assert raised.value.field == "override_reason" and "lrl_1" in raised.value.message
    check_approval(facts(conflicts=("lrl_1: pulls the other way",)), "ana", "retiring lrl_1 next")
    with pytest.raises(InvalidInputError, match="no measured predicted effect"):
        check_approval(facts(measured=False), "ana", None)
    check_approval(facts(measured=False, rule_type="NEGATIVE_EXAMPLE"), "ana", None)


def test_a_proposal_measured_to_make_the_regression_set_worse_needs_an_override_reason() -> None:
    check_approval(facts(regression_delta=-0.05, regression_tolerance=0.05), "ana", None)  # at the tolerance
    check_approval(facts(regression_delta=None), "ana", None)  # nothing measured on it
    with pytest.raises(InvalidInputError, match=r"lower the regression set's macro-F1 by 0\.100") as raised:
        check_approval(facts(regression_delta=-0.1, regression_tolerance=0.05), "ana", None)
    assert raised.value.field == "override_reason"
    check_approval(facts(regression_delta=-0.1, regression_tolerance=0.05), "ana", "the set is tiny; checked by hand")


def test_a_component_holds_at_most_its_rule_limit() -> None:
    check_approval(facts(active_rules=19, max_rules=20), "ana", None)
    with pytest.raises(ConflictError, match="already has 20 active rules"):
        check_approval(facts(active_rules=20, max_rules=20), "ana", None)


# ----------------------------------------------------------------------------- deploy: prompts and ids
class RecordingLLM:
    """A declared fake LLM: records each prompt, answers 'yes' with 0.7 unless the prompt holds a learned rule."""

    model_id = "fake-llm"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def choose(self, messages: Sequence[dict[str, str]], options: Sequence[str]) -> TokenChoice:
        raise AssertionError("not used")

    def choose_raw(self, prompt: str, options: Sequence[str]) -> TokenChoice:
        self.prompts.append(prompt)
        yes = 0.2 if "Learned rules" in prompt else 0.7
        return TokenChoice("yes", {"yes": yes, "no": 1 - yes})

    def generate_json(self, messages: Sequence[dict[str, str]], schema: dict[str, Any], max_tokens: int = 512) -> Any:
        raise AssertionError("not used")


class OnesEmbedder:
    model_id = "fake-embedder"
    dimension = 4

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.ones((len(texts), 4), dtype=np.float32) / 2.0


def test_active_rules_enter_the_prompt_and_the_judge_id_and_an_older_rule_set_is_not_reused(tmp_path: Path) -> None:
    holder = {"rules": LearnedRules(STANCE_LLM)}
    llm = RecordingLLM()
    config = StanceJudgeConfig(mode="two_question", calibrate=False, relevance_gate=None, premise_sentences=None)
    judge = LLMStanceJudge(
        llm, OnesEmbedder(), PROMPTS, config, AnswerCache(tmp_path / "a.sqlite"), rules=lambda: holder["rules"]
    )
    cached = CachedJudge(judge, NLICache(tmp_path / "nli.sqlite"))
    pair = [("The passage.", "The claim.")]

    base_id = cached.model_id
    before = cached.judge(pair)[0]
    assert "Learned rules" not in llm.prompts[-1]
    holder["rules"] = LearnedRules(STANCE_LLM, 1, ("Answer no unless the passage measures the claim's outcome.",))
    assert cached.model_id.startswith(base_id + "+rules:stance_llm@v1:")
    assert cached.rules_version == 1
    after = cached.judge(pair)[0]
    assert "- Answer no unless the passage measures the claim's outcome." in llm.prompts[-1]
    assert after.probs != before.probs  # judged again under the new rule set, not read from the cache
    asked = len(llm.prompts)
    holder["rules"] = LearnedRules(STANCE_LLM, 2, ("Answer no unless the passage measures the claim's outcome.",))
    assert cached.judge(pair)[0].probs == after.probs  # same content, another version: the LLM's answers are reused
    assert len(llm.prompts) == asked
    holder["rules"] = LearnedRules(STANCE_LLM)
    assert cached.model_id == base_id and cached.judge(pair)[0].probs == before.probs


@pytest.mark.parametrize(
    ("template", "variables"),
    [
        ("claim_extraction.j2", {"passage": "P.", "topic": "T", "max_claims": 3}),
        ("citation_usefulness.j2", {"question": "Q?", "claims": ["C."], "title": "T", "abstract": "A."}),
        ("citation_relevance.j2", {"question": "Q?", "claims": ["C."], "title": "T", "abstract": "A."}),
        ("detect_citation.j2", {"title": "T", "anchor": "a", "href": "https://x.example/1", "passage": "P."}),
    ],
)
def test_the_other_llm_prompts_show_learned_rules_only_when_there_are_some(
    template: str, variables: dict[str, Any]
) -> None:
    env = prompt_environment(PROMPTS)
    fence = Fence.new()
    plain = env.get_template(template).render(**variables, fence=fence)
    assert env.get_template(template).render(**variables, fence=fence, learned_rules=[]) == plain
    with_rule = env.get_template(template).render(**variables, fence=fence, learned_rules=["Prefer primary studies."])
    assert "Learned rules (from reviewed corrections):\n- Prefer primary studies.\n" in with_rule
    assert with_rule.index("Prefer primary studies.") < with_rule.rindex(fence.open)  # before the untrusted input
    assert "Learned rules" not in plain


def test_claim_extraction_reads_the_rules_in_force_at_every_call() -> None:
    rules = {"now": LearnedRules("claim_extraction")}
    llm = JsonLLM()
    extractor = ClaimExtractor(llm, PROMPTS, rules=lambda: rules["now"])
    extractor.extract("A passage about drug Q.", "drug Q")
    assert "Learned rules" not in llm.prompts[-1]
    rules["now"] = LearnedRules("claim_extraction", 1, ("State the population of each claim.",))
    extractor.extract("A passage about drug Q.", "drug Q")
    assert "- State the population of each claim." in llm.prompts[-1]


class JsonLLM(RecordingLLM):
    def generate_json(self, messages: Sequence[dict[str, str]], schema: dict[str, Any], max_tokens: int = 512) -> Any:
        self.prompts.append(messages[-1]["content"])
        return {"claims": ["Drug Q lowers blood pressure in adults."]}


def test_claim_extraction_drops_rejected_claims_without_showing_them_and_reports_its_rules_version() -> None:
    rejected = {"claim": "The study was funded by X.", "reason": "not a finding"}
    rules = {"now": LearnedRules("claim_extraction", 2, examples=(rejected,))}
    llm = JsonLLM()
    extractor = ClaimExtractor(llm, PROMPTS, rules=lambda: rules["now"])
    assert extractor.rules_version == 2
    assert extractor.extract("A passage about drug Q.", "drug Q") == ["Drug Q lowers blood pressure in adults."]
    assert "The study was funded by X." not in llm.prompts[-1]  # shown, the offline LLM copied them
    # the LLM answers with a rejected claim again (reworded only in case and spacing): it is dropped
    again = {"claim": "drug q  lowers blood pressure in adults.", "reason": "too broad"}
    rules["now"] = LearnedRules("claim_extraction", 3, examples=(rejected, again))
    assert extractor.extract("A passage about drug Q.", "drug Q") == []
    rules["now"] = LearnedRules("claim_extraction", 4)
    assert extractor.extract("A passage about drug Q.", "drug Q") == ["Drug Q lowers blood pressure in adults."]
    assert extractor.rules_version == 4


def extraction_review(n: int, claim: str, kept: bool = False, reviewer: str = "ana") -> RecordFacts:
    """A review of a claim the LLM extracted, as the learning service records it."""
    return RecordFacts(
        id=f"x{n}",
        kind="confirmation" if kept else "correction",
        component="claim_extraction",
        task_id=f"t{n % 2}",
        reviewer_id=reviewer,
        claim_id=claim,
        predicted_label="adopted" if kept else "extracted",
        correct_label="adopted" if kept else "rejected",
    )


def test_rejections_of_extracted_claims_form_a_pattern_and_a_restore_makes_the_claim_ambiguous() -> None:
    history = [extraction_review(i, f"c{i}") for i in range(4)]
    fifth = classify(extraction_review(4, "c4"), history, high_min=5)
    assert fifth.classification == "generalizable_high" and "extracted->rejected" in fifth.rationale
    assert classify(extraction_review(9, "c9", kept=True), history).classification == "positive"
    restored = [*history, extraction_review(5, "c1", kept=True, reviewer="bo")]
    again = classify(extraction_review(6, "c1", reviewer="cy"), restored)
    assert again.classification == "ambiguous" and "bo: adopted" in again.rationale
    # a person's claim concerns no model: the claim is not a case of the extractor's
    assert RecordFacts("p", "claim_reject", "claims", "t", "ana", claim_id="c1").case_id is None


def test_ranking_constraints_give_each_named_domain_its_smallest_valid_factor() -> None:
    from lyra.ml.learned_rules import EVIDENCE_RANKING, domain_penalties

    plain = LearnedRules(EVIDENCE_RANKING, 1, guidelines=("g",))
    assert plain.fingerprint() == LearnedRules(EVIDENCE_RANKING, 2, guidelines=("g",)).fingerprint()
    rules = LearnedRules(
        EVIDENCE_RANKING,
        3,
        constraints=(
            {"domain": "Mill.example.com", "factor": "0.5"},
            {"domain": "mill.example.com", "factor": "0.25"},
            {"domain": "odd.example.com", "factor": "2"},  # a factor above 1 would promote: ignored
            {"domain": "bad.example.com", "factor": "half"},  # unreadable: ignored
        ),
    )
    assert not rules.empty and rules.fingerprint() != plain.fingerprint()
    assert domain_penalties(rules) == {"mill.example.com": 0.25}
    assert domain_penalties(LearnedRules(EVIDENCE_RANKING)) == {}


def test_rank_summary_reports_mean_rank_and_top_k_share_before_and_after() -> None:
    from lyra.services.learning import _rank_summary

    summary = _rank_summary([(1, 3), (2, 4)], top_k=2, rate="in_top_k")
    assert summary["before"] == {"pairs": 2, "mean_rank": 1.5, "in_top_k": 1.0}
    assert summary["after"] == {"pairs": 2, "mean_rank": 3.5, "in_top_k": 0.0}
    assert summary["delta"] == {"mean_rank": 2.0, "in_top_k": -1.0}
    assert _rank_summary([], 2, "kept_rate")["delta"] == {}


def test_the_report_words_every_kind_of_predicted_effect() -> None:
    from lyra.services.learning import predicted_text

    assert predicted_text({"measured": False}) == "not measured"
    stance = {"measured": True, "corrected": {"delta": {"accuracy": 1.0}}, "regression": {"delta": {"accuracy": 0.0}}}
    assert predicted_text(stance) == "accuracy +1.00 on corrected pairs, +0.00 on regression pairs"
    extraction = {
        "measured": True,
        "component": "claim_extraction",
        "rejected": {"before": {"re_extracted_rate": 0.67}, "after": {"re_extracted_rate": 0.0}},
        "regression": {"before": {"kept_rate": 1.0}, "after": {"kept_rate": 1.0}},
    }
    assert predicted_text(extraction) == "rejected claims returned 0.67 -> 0.0; kept claims returned 1.0 -> 1.0"
    ranking = {
        "measured": True,
        "component": "evidence_ranking",
        "top_k": 2,
        "corrected": {"before": {"mean_rank": 1.5, "in_top_k": 1.0}, "after": {"mean_rank": 2.5, "in_top_k": 0.5}},
        "regression": {"before": {}, "after": {}},  # no kept verdict in those tasks
    }
    assert predicted_text(ranking) == (
        "corrected passages' mean rank 1.5 -> 2.5, in the top 2 1.0 -> 0.5; kept passages in the top -"
    )
    assert predicted_text({"measured": True, "ece_before": 0.2, "ece_after": 0.1}) == "ECE 0.200 -> 0.100"
