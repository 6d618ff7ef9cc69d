"""The REST transport shapes: path parameters and query parameter models.

A route takes its ids from the path (:data:`TaskIdPath`, ...) and the rest of its operation's request from the body
(the ``...Body`` models of :mod:`lyra.models`) or, for a GET route, from the query: the models below, each the
request's own fields (``...Fields``, or the request itself when its route has no path id) read from query text.
Either way the fields, their types, limits, defaults and descriptions are the request model's, declared once in
:mod:`lyra.models`, so the MCP tool and the route cannot drift; the route then builds the request model.
"""

from __future__ import annotations

import re
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from fastapi import Path
from pydantic import Field, ValidationInfo, field_validator

from lyra.core.ids import TASK_ID_PATTERN
from lyra.models import api, export, judging, learning, timeline

TaskIdPath = Annotated[str, Path(pattern=TASK_ID_PATTERN.pattern, description="a task id")]
ClaimIdPath = Annotated[str, Path(min_length=1, max_length=200, description="a claim id (get_materials lists them)")]
InterventionIdPath = Annotated[
    str, Path(pattern=api.INTERVENTION_ID_PATTERN, description="an intervention item id (iv_...)")
]

_INTEGER_TEXT = re.compile(r"-?[0-9]{1,30}")
_NUMBER_TEXT = re.compile(r"-?[0-9]{1,30}(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,3})?")


def scalar_kind(annotation: Any) -> type | None:
    """``bool``, ``int`` or ``float`` when the annotation is one of them (or it or None); else None."""
    options = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    kinds = [a for a in options if a is not type(None)]
    if len(kinds) == 1 and kinds[0] in (bool, int, float):
        kind: type = kinds[0]
        return kind
    return None


def from_query_text(kind: type, value: Any) -> Any:
    """A query parameter is text; it becomes a boolean, integer or number only when written as one, exactly:
    ``true``/``false``; digits; a decimal number. ``1``/``yes``/``on``, ``7.0`` for an integer, ``1_000``, spaces,
    ``nan`` are refused like a JSON body's wrong type."""
    if not isinstance(value, str):
        return value
    if kind is bool:
        if value not in ("true", "false"):
            raise ValueError("must be true or false")
        return value == "true"
    if kind is int:
        if not _INTEGER_TEXT.fullmatch(value):
            raise ValueError("must be a whole number written in digits, e.g. 5")
        return int(value)
    if not _NUMBER_TEXT.fullmatch(value):
        raise ValueError("must be a number written in digits, e.g. 2.5")
    return float(value)


class QueryParameters(api.Request):
    """A query parameter model, validated like the request models (a :class:`~lyra.models.api.Request`: strict, no
    coercion, unknown parameters refused, a list also from its JSON text), after each boolean, integer or number
    parameter's text is read as its value (:func:`from_query_text`); a field's error names the field."""

    @field_validator("*", mode="before")
    @classmethod
    def _from_query_text(cls, value: Any, info: ValidationInfo) -> Any:
        kind = scalar_kind(cls.model_fields[info.field_name].annotation) if info.field_name else None
        return value if kind is None else from_query_text(kind, value)


class NoQuery(QueryParameters):
    """A route whose request is all in its path (or empty): any query parameter is refused as unknown."""


class StatusQuery(QueryParameters, api.GetStatusFields):
    pass


class AuthQueueQuery(QueryParameters, api.GetAuthQueueFields):
    pass


class GraphQuery(QueryParameters, api.GetEvidenceGraphFields):
    pass


class MaterialsQuery(QueryParameters, api.MaterialsOptions):
    """get_materials' options as flat parameters, and the page: ``limit`` (absent: every claim from ``cursor`` on,
    streamed as one JSON document) and ``cursor``."""

    limit: int | None = Field(
        default=None,
        ge=1,
        le=api.MATERIALS_PAGE_MAX,
        description="claims per page (oldest first), answered with next_cursor when more follow; without it every "
        "claim from cursor on is streamed as one JSON document",
    )
    cursor: api.MaterialsCursor = None

    def options(self) -> api.MaterialsOptions:
        return api.MaterialsOptions(**{name: getattr(self, name) for name in api.MaterialsOptions.model_fields})


class ReviewQueueQuery(QueryParameters, judging.ReviewQueueFields):
    pass


class ExportQuery(QueryParameters, export.ExportFields):
    pass


class ChangesQuery(QueryParameters, timeline.GetChangesFields):
    pass


class TimelineQuery(QueryParameters, timeline.GetClaimTimelineFields):
    pass


class ProposalsQuery(QueryParameters, learning.ListProposalsRequest):
    pass


class RulesQuery(QueryParameters, learning.ListRulesRequest):
    pass


class FeedbackListQuery(QueryParameters, learning.FeedbackForComponentRequest):
    pass


class SimilarQuery(QueryParameters, learning.FindSimilarFields):
    pass


__all__ = [
    "AuthQueueQuery",
    "ChangesQuery",
    "ClaimIdPath",
    "ExportQuery",
    "FeedbackListQuery",
    "GraphQuery",
    "InterventionIdPath",
    "MaterialsQuery",
    "NoQuery",
    "ProposalsQuery",
    "QueryParameters",
    "ReviewQueueQuery",
    "RulesQuery",
    "SimilarQuery",
    "StatusQuery",
    "TaskIdPath",
    "TimelineQuery",
    "from_query_text",
    "scalar_kind",
]
