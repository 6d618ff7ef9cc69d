"""The learning loop's proposal batch as a background job (decision record 0013: a batch takes minutes, no HTTP call
waits for it).

A batch measures every proposal with the judge, which takes minutes, so the doors queue it (``queue_proposals``:
at most one batch queued or running at once) and return the job id at once; a worker runs
:meth:`~lyra.services.learning.LearningService.generate_proposals`, whose stages and counters become the job's
progress (``get_job``), and keeps the batch's outcome as the job's result: the ids of the proposals it created, the
records it added to pending ones, and why groups gave none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lyra.models.learning import GenerateProposalsRequest, ProposalsJob
from lyra.services.jobs import ClaimedJob, JobContext, JobOutcome, JobService
from lyra.services.learning import LearningService

LEARNING_PROPOSALS = "learning_proposals"  # the job kind
PROPOSALS_KEY = "learning:proposals"  # one batch queued or running at a time


def queue_proposals(jobs: JobService, request: GenerateProposalsRequest) -> ProposalsJob:
    """Queue a proposal batch, or return the one already queued or running (its options stay as they were)."""
    queued = jobs.queue_service_job(LEARNING_PROPOSALS, PROPOSALS_KEY, request.model_dump(mode="json"))
    return ProposalsJob(
        job_id=queued.id,
        state=queued.state,
        already_queued=not queued.queued,
        next_step=f"get_job(id={queued.id!r}) shows its progress, then its result: the ids of the proposals it "
        "created (get_proposal / list_proposals)",
    )


class ProposalsExecutor:
    """Runs ``learning_proposals`` jobs (give it to the worker pool through ``route_jobs``)."""

    def __init__(self, learning: Callable[[], LearningService]) -> None:
        self._learning = learning  # built when the first batch runs (it loads the embedder)

    def __call__(self, job: ClaimedJob, ctx: JobContext) -> JobOutcome:
        request = GenerateProposalsRequest.model_validate(job.options)
        ctx.report({"stage": "starting"})
        out = self._learning().generate_proposals(request, progress=ctx.report)
        result: dict[str, Any] = {
            "created": [p.id for p in out.created],
            "consolidated": out.consolidated,
            "skipped": out.skipped,
        }
        return JobOutcome(result=result)
