"""Secrets kept out of the graph: one JSON object in a file only its owner may read.

``query_graph`` (read-only Cypher for an assistant) and anyone with Neo4j Browser can read every property of every
node, so a value Lyra must keep secret (a cookie a person gave, a webhook's signing key) never goes into Neo4j. It
goes into a file under the state folder instead: mode 0600 in a folder of mode 0700. Every read and write takes an
exclusive ``flock`` on a lock file beside it (``<name>.lock``), so the CLI, the server and its worker threads (one
machine, one state folder) see one consistent file; a write goes to a temporary file (0600 from its creation) that
then replaces the old one, so a reader never sees half a file. An unreadable file reads as empty (the next write
replaces it).

Used by :class:`lyra.services.interventions.CookieStore` (``auth/cookies.json``) and
:class:`lyra.services.webhooks.WebhookSecrets` (``auth/webhooks.json``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class SecretFile:
    """One JSON object (top-level keys: usually task ids) in an owner-only file, read and written under a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self._lock, open(self.path.with_suffix(".lock"), "a+") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # unreadable: as if empty (the next write replaces it)
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        temporary = self.path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(temporary, self.path)

    def read(self) -> dict[str, Any]:
        """The whole object, as it is now."""
        with self._locked():
            return self._read()

    @contextlib.contextmanager
    def edit(self) -> Iterator[dict[str, Any]]:
        """The whole object to change in place; written back (atomically) when the block ends without an error, and
        only if it changed. The lock is held for the whole block."""
        with self._locked():
            data = self._read()
            before = json.dumps(data, sort_keys=True)
            yield data
            if json.dumps(data, sort_keys=True) != before:
                self._write(data)
