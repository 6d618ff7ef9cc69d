"""Lyra's error tree as classes (shared by the unit check of the tree and the integration check of its mapping)."""

from __future__ import annotations

from lyra.core.errors import LyraError


def error_classes() -> dict[str, type[LyraError]]:
    found: dict[str, type[LyraError]] = {}
    pending: list[type[LyraError]] = [LyraError]
    while pending:
        cls = pending.pop()
        found[cls.__name__] = cls
        pending.extend(cls.__subclasses__())
    return found
