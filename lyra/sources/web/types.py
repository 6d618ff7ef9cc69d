"""What the fetcher and its browser backend exchange: a fetched HTTP response (:class:`RawResponse`) and the
renderer protocol (:class:`PageRenderer`). Their own module, so that :mod:`lyra.sources.web.fetcher` (which builds
a :class:`~lyra.sources.web.browser.ChromiumRenderer`) and :mod:`lyra.sources.web.browser` (which renders a
:class:`RawResponse`) import it rather than each other."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

__all__ = ["PageRenderer", "RawResponse"]


@dataclass(frozen=True)
class RawResponse:
    """One HTTP response as fetched (no redirect followed): ``body`` is empty for redirects and errors."""

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes = b""

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def charset(self) -> str | None:
        for part in self.headers.get("content-type", "").split(";")[1:]:
            key, _, value = part.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                return value.strip().strip("\"'")
        return None


class PageRenderer(Protocol):
    """A browser backend: renders ``page`` (fetched already: serve it as is) and returns the resulting HTML. Every
    other request the browser makes must be served through ``fetch`` (the guarded, polite fetcher; it raises when
    it refuses), never by the browser's own network stack. :class:`lyra.sources.web.browser.ChromiumRenderer`."""

    def render(self, page: RawResponse, fetch: Callable[[str], RawResponse], timeout: float) -> str: ...

    def close(self) -> None: ...
