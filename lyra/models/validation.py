"""Turn pydantic validation failures into InvalidInputError naming the exact field."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from lyra.core.errors import InvalidInputError

M = TypeVar("M", bound=BaseModel)


def _field_path(prefix: str, loc: tuple[int | str, ...]) -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path = f"{path}.{part}" if path else str(part)
    return path or "input"


def error_message(msg: str) -> str:
    """pydantic's message without the "Value error, " it puts before the text of a validator's ValueError."""
    return msg.removeprefix("Value error, ")


def parse_one(model: type[M], data: Any, field: str = "", *, strict: bool = False) -> M:
    """Validate ``data`` as ``model``; on failure raise InvalidInputError for the first bad field.

    ``strict``: no type coercion (pydantic strict mode): an integer field takes only an integer (not ``true``,
    ``"5"`` or ``5.0``), a boolean only ``true``/``false``, a string only a string; a float field still takes an
    integer. The request models (:class:`lyra.models.api.Request`) are strict by their configuration, so both
    doors validate them this way; a REST query parameter's text is read first (``lyra.api.params``: digits for an
    integer, ``true``/``false`` for a boolean).
    """
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data, strict=strict)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InvalidInputError(_field_path(field, tuple(first["loc"])), error_message(first["msg"])) from None


@functools.cache
def _list_adapter(model: type[BaseModel]) -> TypeAdapter[list[Any]]:
    return TypeAdapter(list[model])  # type: ignore[valid-type]


def parse_many(model: type[M], rows: Iterable[Any], field: str) -> list[M]:
    """Validate every row before anything is written; the error names ``field[i].name``.

    One pydantic-core call for the whole list (a bulk write of 100k rows spends a third of the time per-row calls
    took); rows that are already ``model`` instances pass through unchanged."""
    data = rows if isinstance(rows, list) else list(rows)
    try:
        out: list[M] = _list_adapter(model).validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InvalidInputError(_field_path(field, tuple(first["loc"])), error_message(first["msg"])) from None
    return out


def reject_unknown(data: Mapping[str, Any], allowed: Iterable[str], field: str) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise InvalidInputError(f"{field}.{unknown[0]}" if field else unknown[0], "unknown field")
