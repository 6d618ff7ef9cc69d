"""A stand-in for ``Operations`` in the door tests: every operation records that it was reached and stops there."""

from __future__ import annotations

from typing import Any

from lyra.core.errors import ConflictError


class StubOperations:
    """Every operation records that it was reached and stops there (validation passed)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.requests: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        def operation(*args: Any, **_kwargs: Any) -> Any:
            self.calls.append(name)
            self.requests.extend(args)
            raise ConflictError(f"operation {name} reached")  # 409 / a tool error: validation passed

        return operation
