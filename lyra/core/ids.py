"""Identifiers: validated task ids, the per-task label, and generated node/edge ids."""

from __future__ import annotations

import hashlib
import re
import uuid

from lyra.core.errors import InvalidInputError

TASK_ID_PATTERN = re.compile(r"^[a-z][a-z0-9_]{2,63}$")


def validate_task_id(task_id: object, field: str = "task_id") -> str:
    """Return ``task_id`` if it matches ``^[a-z][a-z0-9_]{2,63}$``, else raise InvalidInputError."""
    if not isinstance(task_id, str):
        raise InvalidInputError(field, f"must be a string, got {type(task_id).__name__}")
    if not TASK_ID_PATTERN.fullmatch(task_id):
        raise InvalidInputError(
            field,
            f"{task_id!r} is not a valid task id",
            hint="3-64 characters: a lowercase letter first, then lowercase letters, digits or '_'",
        )
    return task_id


def task_label(task_id: str) -> str:
    """The per-task label carried by a task's claims, e.g. ``Task_vitamin_d``.

    Only ever built from a validated id, so it is safe to backtick into Cypher.
    """
    return f"Task_{validate_task_id(task_id)}"


def new_id(prefix: str) -> str:
    """A fresh random id such as ``clm_3f2a...`` (prefix tells the kind at a glance)."""
    return f"{prefix}_{uuid.uuid4().hex}"


def text_hash(text: str) -> str:
    """sha256 of the whitespace-normalised text: the global identity of a fragment."""
    normalised = " ".join(text.split())
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()
