"""The REST routes: one router per feature (the catalogue's REST tags), each a module of endpoints.

Every endpoint is a thin door: it takes the operation's ids from the path and the rest of its request as the
declared body or query model, builds the request model, calls the one :class:`~lyra.services.operations.Operations`
method and returns its response model. The method, path, status code and response model come from the catalogue
(:mod:`lyra.models.catalogue`) through :meth:`~lyra.api.routing.FeatureRouter.operation`;
``tests/unit/architecture/test_catalogue.py`` checks that every operation offered on REST has its route and no
route is unknown.
"""

from __future__ import annotations

from fastapi import APIRouter

from lyra.api.routes import evidence, explore, jobs, judging, learning, maintenance, service, tasks, trust

# in the catalogue's order of features (the OpenAPI document lists their routes in this order)
ROUTERS: tuple[APIRouter, ...] = (
    service.router,
    tasks.router,
    evidence.router,
    judging.router,
    jobs.router,
    explore.router,
    maintenance.router,
    trust.router,
    learning.router,
)

__all__ = ["ROUTERS"]
