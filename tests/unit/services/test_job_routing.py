"""A worker pool's executor routing and a job's progress reports (no I/O: the executors and the progress sink are
stand-ins written for these tests)."""

from __future__ import annotations

from typing import Any

import pytest

from lyra.core.errors import JobCancelled
from lyra.services.jobs import ClaimedJob, JobContext, JobOutcome, route_jobs


def claimed(kind: str) -> ClaimedJob:
    return ClaimedJob(id="job_1", task_id="", kind=kind, value="v", options={}, attempts=1, claim="claim_1")


def named(name: str) -> Any:
    def run(job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        return JobOutcome(result={"by": name, "kind": job.kind})

    return run


def test_a_kind_the_router_names_goes_to_its_executor_and_any_other_to_the_default() -> None:
    route = route_jobs(named("research"), {"learning_proposals": named("learning")})
    for kind, by in [("learning_proposals", "learning"), ("doi", "research"), ("file", "research")]:
        job = claimed(kind)
        assert route(job, JobContext(job)).result == {"by": by, "kind": kind}


def test_a_progress_report_reaches_the_sink_and_a_cancelled_job_stops_at_its_next_report() -> None:
    seen: list[dict[str, Any]] = []
    ctx = JobContext(claimed("learning_proposals"), _sink=seen.append)
    ctx.report({"stage": "one", "steps_done": 1})
    assert ctx.progress == {"stage": "one", "steps_done": 1} and seen == [{"stage": "one", "steps_done": 1}]
    ctx.cancel()
    with pytest.raises(JobCancelled):
        ctx.report({"stage": "two"})
    assert seen[-1] == {"stage": "two"}  # recorded, then stopped
