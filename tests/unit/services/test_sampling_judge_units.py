"""The push door's bookkeeping in JudgingService.judge_with_assistant, with fakes: a fake graph store and task
repository, the pull door's two halves replaced by recording fakes, and fake samplers (scripted answers, refusals,
timeouts). What is pinned: the outcome counts, the budget's reservation and give-back, flagged passages never
sent, and the verdicts handed to submit_judgments. The real server, SDK client, Neo4j and LLM are in
tests/integration/mcp/test_sampling_judge.py."""

from __future__ import annotations

from typing import Any

import pytest

from lyra.core.errors import ConflictError, RateLimited
from lyra.core.settings import JudgingSettings
from lyra.models.api import SourceText
from lyra.models.judging import (
    SAMPLING_SYSTEM_PROMPT,
    JudgeWithAssistantRequest,
    JudgmentItem,
    NextJudgments,
    NextJudgmentsRequest,
    SampledAnswer,
    SamplingDeclined,
    SamplingPrompt,
    SamplingTimedOut,
    SubmitJudgmentsRequest,
    SubmitJudgmentsResponse,
    WrittenJudgment,
    estimate_tokens,
)
from lyra.services.judging import JudgingService

TASK = "units_task"


class FakeStore:
    """Answers only judging/sampling_state, from the fake service's counters."""

    def __init__(self, service: FakeJudging) -> None:
        self.service = service

    def run(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        if name == "judging/release_tickets":
            assert params is not None and params["task_id"] == TASK
            self.service.released.extend(params["ids"])
            return [{"released": len(params["ids"])}]
        assert name == "judging/sampling_state", name
        return [{"enabled": self.service.enabled, "calls_used": self.service.calls, "tokens_used": self.service.tokens}]


class FakeTasks:
    def get(self, task_id: str) -> dict[str, Any]:
        return {"id": task_id}


class FakeJudging(JudgingService):
    """JudgingService with next_judgments / submit_judgments and the budget statement replaced by fakes."""

    def __init__(self, settings: JudgingSettings, flagged: list[bool]) -> None:
        super().__init__(FakeStore(self), FakeTasks(), settings)  # type: ignore[arg-type]
        self.enabled = True
        self.calls = 0
        self.tokens = 0
        self.flagged = flagged
        self.asked_limit: int | None = None
        self.submitted: list[tuple[str, SubmitJudgmentsRequest]] = []
        self.released: list[str] = []
        self.rate_limited = False

    def next_judgments(self, request: NextJudgmentsRequest, judge: str | None = None) -> NextJudgments:
        self.asked_limit = request.limit
        items = [
            JudgmentItem(
                ticket=f"jtk_{i}",
                claim_id="clm_1",
                claim="A claim.",
                passage=SourceText(text=f"passage {i}", flagged=flag),
                fenced_passage=f"<<F>>passage {i}<</F>>",
                fence=["<<F>>", "<</F>>"],
                page=None,
                current_relation="NEUTRAL",
                current_judge="offline:x",
                flagged=flag,
                policy_score=0.1,
                expires_at="later",
            )
            for i, flag in enumerate(self.flagged[: request.limit])
        ]
        return NextJudgments(
            task_id=request.task_id,
            policy=request.policy,
            instruction="",
            labels=[],
            instructions_version="v",
            items=items,
            remaining=0,
        )

    def submit_judgments(self, request: SubmitJudgmentsRequest, judge: str | None = None) -> SubmitJudgmentsResponse:
        assert judge is not None
        if self.rate_limited:
            raise RateLimited("task took 120 assistant judgments in the last minute")
        self.submitted.append((judge, request))
        written = [
            WrittenJudgment(
                index=i,
                edge_id=f"edg_{i}",
                claim_id="clm_1",
                relation=item.relation,
                previous_relation="NEUTRAL",
                weight=1,
            )
            for i, item in enumerate(request.items)
        ]
        return SubmitJudgmentsResponse(task_id=request.task_id, judge=judge, written=written, errors=[], claims=[])

    def _use_sampling_budget(self, task_id: str, calls: int, tokens: int) -> tuple[bool, int, int]:
        s = self.settings
        ok = (calls <= 0 and tokens <= 0) or (
            self.calls + calls <= s.judging_sampling_max_calls and self.tokens + tokens <= s.judging_sampling_max_tokens
        )
        if ok:
            self.calls += calls
            self.tokens += tokens
        return ok, self.calls, self.tokens


class ScriptedSampler:
    """A fake sampler: answers each request with the next entry (text, an exception to raise)."""

    client = "fake-client"

    def __init__(self, script: list[str | Exception]) -> None:
        self.script = list(script)
        self.prompts: list[SamplingPrompt] = []

    def __call__(self, prompt: SamplingPrompt) -> SampledAnswer:
        self.prompts.append(prompt)
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return SampledAnswer(text=step, model="fake-model")


def settings(**update: Any) -> JudgingSettings:
    return JudgingSettings(**{"judging_sampling_enabled": True, **update})


def prompt_tokens(prompt: SamplingPrompt) -> int:
    return estimate_tokens(prompt.system) + estimate_tokens(prompt.user)


def test_each_outcome_is_counted_and_only_good_verdicts_are_submitted() -> None:
    service = FakeJudging(settings(), flagged=[False, False, True, False, False])
    sampler = ScriptedSampler(
        [SamplingDeclined("no"), SamplingTimedOut("late"), "maybe?", '{"relation": "SUPPORTS", "confidence": 0.7}']
    )
    answer = service.judge_with_assistant(JudgeWithAssistantRequest(task_id=TASK, limit=5), sampler)
    assert answer.outcomes.model_dump() == {
        "judged": 1,
        "declined": 1,
        "timed_out": 1,
        "off_label": 1,
        "withheld_flagged": 1,
        "over_budget": 0,
    }
    assert all("passage 2" not in p.user for p in sampler.prompts)  # the flagged one is never sent
    assert all(p.system == SAMPLING_SYSTEM_PROMPT for p in sampler.prompts)
    [(judge, request)] = service.submitted
    assert judge == "assistant:fake-client/fake-model" and [i.ticket for i in request.items] == ["jtk_4"]
    assert [(w.index, w.relation) for w in answer.written] == [(4, "SUPPORTS")]  # the index of the pair sent
    assert sorted(service.released) == ["jtk_0", "jtk_1", "jtk_2", "jtk_3"]  # offered again at once
    # the budget: 4 requests; declined gives back its answer tokens, timed out keeps them, answers keep their length
    declined, late, garbage, good = sampler.prompts
    answer_tokens = service.settings.judging_sampling_answer_tokens
    expected = (
        prompt_tokens(declined)
        + prompt_tokens(late)
        + answer_tokens
        + prompt_tokens(garbage)
        + estimate_tokens("maybe?")
        + prompt_tokens(good)
        + estimate_tokens('{"relation": "SUPPORTS", "confidence": 0.7}')
    )
    assert (answer.budget.calls_used, answer.budget.tokens_used) == (4, expected) == (service.calls, service.tokens)


def test_the_request_budget_limits_the_batch_and_later_pairs_are_over_budget() -> None:
    service = FakeJudging(settings(judging_sampling_max_calls=3), flagged=[False] * 6)
    service.calls = 1  # one request spent by an earlier call
    sampler = ScriptedSampler(["NEUTRAL 0.5", "REFUTES 0.9"])
    answer = service.judge_with_assistant(JudgeWithAssistantRequest(task_id=TASK, limit=6), sampler)
    assert service.asked_limit == 2 and len(sampler.prompts) == 2
    assert answer.outcomes.judged == 2 and answer.budget.calls_used == 3
    again = service.judge_with_assistant(JudgeWithAssistantRequest(task_id=TASK, limit=6), ScriptedSampler([]))
    assert again.outcomes.judged == 0 and again.written == [] and again.budget.calls_used == 3


def test_the_token_budget_stops_before_a_request_that_would_pass_it() -> None:
    service = FakeJudging(settings(judging_sampling_max_tokens=1000), flagged=[False, True, False, False])
    service.tokens = 600
    sampler = ScriptedSampler([])
    answer = service.judge_with_assistant(JudgeWithAssistantRequest(task_id=TASK, limit=4), sampler)
    # the first request would reserve its prompt (about 230 tokens) and 200 answer tokens: over 1000 with 600 spent
    assert sampler.prompts == [] and answer.outcomes.over_budget == 3 and answer.outcomes.withheld_flagged == 1
    assert sorted(service.released) == ["jtk_0", "jtk_1", "jtk_2", "jtk_3"]
    assert (service.calls, service.tokens) == (0, 600)


@pytest.mark.parametrize("switch", ["setting", "task", "client"])
def test_the_door_is_refused_unless_the_setting_the_task_option_and_the_client_allow_it(switch: str) -> None:
    service = FakeJudging(settings(judging_sampling_enabled=switch != "setting"), flagged=[False])
    service.enabled = switch != "task"
    sampler = None if switch == "client" else ScriptedSampler(["SUPPORTS"])
    with pytest.raises(ConflictError):
        service.judge_with_assistant(JudgeWithAssistantRequest(task_id=TASK, limit=1), sampler)
    assert service.submitted == [] and service.calls == 0


def test_a_rate_limited_submit_reports_each_judged_pair_and_gives_its_ticket_back() -> None:
    service = FakeJudging(settings(), flagged=[False, False])
    service.rate_limited = True
    answer = service.judge_with_assistant(
        JudgeWithAssistantRequest(task_id=TASK, limit=2), ScriptedSampler(["SUPPORTS 0.9", "REFUTES 0.6"])
    )
    assert answer.outcomes.judged == 2 and answer.written == []
    assert [(e.index, e.field) for e in answer.errors] == [(0, "rate_limit"), (1, "rate_limit")]
    assert sorted(service.released) == ["jtk_0", "jtk_1"]
