"""Maintenance: the graph-wide orphan sweep."""

from __future__ import annotations

from typing import Annotated

from fastapi import Body

from lyra.api.routing import FeatureRouter, Ops
from lyra.models import api

router = FeatureRouter("maintenance")


@router.operation("collect_garbage")
def collect_garbage(ops: Ops, request: Annotated[api.CollectGarbageRequest | None, Body()] = None) -> api.GarbageReport:
    """Graph-wide orphan sweep (counts first; dry_run defaults to true; a real run needs dry_run=false and
    confirm=true; refused with 409 while jobs run)."""
    return ops.collect_garbage(request or api.CollectGarbageRequest())
