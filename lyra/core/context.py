"""What the code running now works for, readable below the layer that knows it (no parameter threaded through).

``current_job``: the id of the job a worker thread is running (set by the job runner around the executor). Ingest
uses it as the holder of the pair leases it takes (lyra/services/ingest.py), so a job run again after its worker died
takes back the leases of its first attempt instead of waiting for them to expire.
"""

from __future__ import annotations

from contextvars import ContextVar

current_job: ContextVar[str | None] = ContextVar("lyra_current_job", default=None)
