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


def task_id_for(hypothesis: str) -> str:
    """The task id every door derives from a question or hypothesis when none is given: its first words plus a
    short hash of the whole text (``vitamin_d_lowers_the_risk_of_3fa2c1``). The same text always gives the same
    id, whichever door (MCP, REST, CLI) it came through."""
    words = re.findall(r"[a-z0-9]+", hypothesis.lower())
    stem = "_".join(words)[:40].strip("_") or "task"
    if not stem[0].isalpha():
        stem = f"t_{stem}"
    digest = hashlib.sha256(hypothesis.encode("utf-8")).hexdigest()[:6]
    return validate_task_id(f"{stem}_{digest}")
