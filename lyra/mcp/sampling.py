"""The push door's MCP half: a :class:`~lyra.models.judging.Sampler` over the calling session's
``sampling/createMessage`` (docs/concepts/assistant-judge.md, "The push door").

Tools run in a worker thread (the SDK runs a synchronous tool with ``anyio.to_thread``), so the sampler hands each
request back to the session's event loop with ``anyio.from_thread.run`` and waits for the client's answer there,
at most the prompt's ``timeout_seconds``. An error answer (the client or its user refused) is
:class:`~lyra.models.judging.SamplingDeclined`, no answer in time :class:`~lyra.models.judging.SamplingTimedOut`;
the service falls back to the offline verdict for both.

The MCP specification revision of 2026-07-28 deprecates sampling; the SDK warns on each request. Lyra keeps the
door for the clients that declare the capability (revision 2025-11-25 and earlier) and silences that one warning
where it sends the request.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import anyio
import anyio.from_thread
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import SamplingMessage, TextContent

from lyra.models.judging import SampledAnswer, SamplingDeclined, SamplingPrompt, SamplingTimedOut

log = logging.getLogger(__name__)


class SessionSampler:
    """Asks the model of the MCP client on the other end of ``session`` (a ``ServerSession``), in relation to the
    tool call ``request_id``. ``client``: the client's declared name (``clientInfo.name``), cleaned."""

    def __init__(self, session: Any, request_id: Any, client: str) -> None:
        self.session = session
        self.request_id = request_id
        self.client = client

    def __call__(self, prompt: SamplingPrompt) -> SampledAnswer:
        result: SampledAnswer = anyio.from_thread.run(self._ask, prompt)
        return result

    async def _ask(self, prompt: SamplingPrompt) -> SampledAnswer:
        message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt.user))
        try:
            with anyio.fail_after(prompt.timeout_seconds):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    pending = self.session.create_message(
                        [message],
                        max_tokens=prompt.max_tokens,
                        system_prompt=prompt.system,
                        temperature=0.0,
                        include_context="none",
                        related_request_id=self.request_id,
                    )
                result = await pending
        except TimeoutError:
            raise SamplingTimedOut(f"no answer in {prompt.timeout_seconds} s") from None
        except MCPError as exc:
            raise SamplingDeclined(f"{exc.error.code}: {exc.error.message}") from None
        content = result.content
        text = content.text if isinstance(content, TextContent) else ""
        return SampledAnswer(text=text, model=str(result.model))


def session_sampler(context: Any, client: str | None) -> SessionSampler | None:
    """The calling session's sampler, or None when there is no session, its client declared no sampling, or the
    connection cannot carry a server's request during a tool call (the 2026-07-28 protocol forbids it; a streamable
    HTTP server answering in plain JSON has no stream for it)."""
    try:
        session = context.session
        capabilities = session.client_capabilities
        request_id = context.request_context.request_id
    except (AttributeError, ValueError, RuntimeError):  # no request context (a direct call) or no session
        return None
    if capabilities is None or capabilities.sampling is None:
        return None
    if not session.can_send_request:  # no back-channel: the 2026-07-28 protocol, or HTTP answered as plain JSON
        return None
    return SessionSampler(session, request_id, client or "unknown-client")


__all__ = ["SessionSampler", "session_sampler"]
