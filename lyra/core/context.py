"""What the code running now works for, readable below the layer that knows it (no parameter threaded through).

``current_job``: the id of the job a worker thread is running (set by the job runner around the executor). Ingest
uses it as the holder of the pair leases it takes (lyra/services/ingest.py), so a job run again after its worker died
takes back the leases of its first attempt instead of waiting for them to expire.

``current_door``: the door a call came through (``mcp``, ``rest`` or ``cli``; None for a call from Python), set by
that door around the operation. The feedback records keep it (lyra/services/feedback.py), so a correction says
whether a person sent it over REST or the CLI or an MCP client sent it on its user's behalf.
"""

from __future__ import annotations

from contextvars import ContextVar

current_job: ContextVar[str | None] = ContextVar("lyra_current_job", default=None)
current_door: ContextVar[str | None] = ContextVar("lyra_current_door", default=None)
