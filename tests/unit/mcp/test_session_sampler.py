"""The push door's MCP half (lyra/mcp/sampling.py) over stand-in sessions: fakes of the SDK's ServerSession that
answer, refuse, or never answer, so the mapping to SampledAnswer / SamplingDeclined / SamplingTimedOut is pinned
without a client. The real SDK client drives it in tests/integration/mcp/test_sampling_judge.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import CreateMessageResult, ImageContent, TextContent

from lyra.mcp.sampling import SessionSampler, session_sampler
from lyra.models.judging import SampledAnswer, SamplingDeclined, SamplingPrompt, SamplingTimedOut

PROMPT = SamplingPrompt(system="sys", user="Claim: c", max_tokens=50, timeout_seconds=0.2)


class FakeSession:
    """A stand-in ServerSession: records the requests and answers with `behaviour`."""

    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.requests: list[dict[str, Any]] = []

    async def create_message(self, messages: list[Any], **kwargs: Any) -> CreateMessageResult:
        self.requests.append({"messages": messages, **kwargs})
        if self.behaviour == "refuse":
            raise MCPError(code=-1, message="User rejected sampling request")
        if self.behaviour == "hang":
            await anyio.sleep(5)
        if self.behaviour == "image":
            content: Any = ImageContent(type="image", data="AAAA", mime_type="image/png")
        else:
            content = TextContent(type="text", text="REFUTES 0.7")
        return CreateMessageResult(role="assistant", content=content, model="fake-model")


def ask(session: FakeSession) -> SampledAnswer:
    sampler = SessionSampler(session, request_id=7, client="fake-client")

    async def run() -> SampledAnswer:
        return await anyio.to_thread.run_sync(sampler, PROMPT)  # tools run in a worker thread, as the SDK runs them

    return anyio.run(run)


def test_an_answer_becomes_its_text_and_model() -> None:
    session = FakeSession("answer")
    assert ask(session) == SampledAnswer(text="REFUTES 0.7", model="fake-model")
    request = session.requests[0]
    assert request["max_tokens"] == 50 and request["system_prompt"] == "sys" and request["related_request_id"] == 7
    assert request["messages"][0].content.text == "Claim: c"


def test_a_non_text_answer_is_empty_text() -> None:
    assert ask(FakeSession("image")).text == ""


def test_a_refusal_is_declined() -> None:
    with pytest.raises(SamplingDeclined, match="User rejected"):
        ask(FakeSession("refuse"))


def test_no_answer_in_time_is_timed_out() -> None:
    with pytest.raises(SamplingTimedOut):
        ask(FakeSession("hang"))


def context(sampling: object | None, can_send: bool = True) -> Any:
    session = SimpleNamespace(client_capabilities=SimpleNamespace(sampling=sampling), can_send_request=can_send)
    return SimpleNamespace(session=session, request_context=SimpleNamespace(request_id=3))


def test_a_sampler_only_for_a_client_that_declared_sampling_on_a_connection_with_a_back_channel() -> None:
    sampler = session_sampler(context(object()), "claude-ai")
    assert sampler is not None and sampler.client == "claude-ai" and sampler.request_id == 3
    assert session_sampler(context(None), "claude-ai") is None
    assert session_sampler(context(object(), can_send=False), "claude-ai") is None
    assert session_sampler(SimpleNamespace(), "claude-ai") is None  # no session: a direct call
    assert session_sampler(context(object()), None).client == "unknown-client"  # type: ignore[union-attr]
