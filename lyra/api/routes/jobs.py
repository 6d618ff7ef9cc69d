"""Jobs: one job of a task or of the service itself (a proposal batch), with its progress."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from lyra.api.params import NoQuery
from lyra.api.routing import FeatureRouter, Ops
from lyra.models import api

router = FeatureRouter("jobs")


@router.operation("get_job")
def get_job(ops: Ops, job_id: str, _query: Annotated[NoQuery, Query()]) -> api.JobInfo:
    """One job: state, attempts, error, result, and its progress while it runs."""
    return ops.get_job(api.GetJobRequest(id=job_id))
