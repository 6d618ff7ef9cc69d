"""Turn pydantic validation failures into InvalidInputError naming the exact field."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

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


def parse_one(model: type[M], data: Any, field: str = "") -> M:
    """Validate ``data`` as ``model``; on failure raise InvalidInputError for the first bad field."""
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InvalidInputError(_field_path(field, tuple(first["loc"])), first["msg"]) from None


def parse_many(model: type[M], rows: Iterable[Any], field: str) -> list[M]:
    """Validate every row before anything is written; the error names ``field[i].name``."""
    out: list[M] = []
    for index, row in enumerate(rows):
        out.append(parse_one(model, row, f"{field}[{index}]"))
    return out


def reject_unknown(data: Mapping[str, Any], allowed: Iterable[str], field: str) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise InvalidInputError(f"{field}.{unknown[0]}" if field else unknown[0], "unknown field")
