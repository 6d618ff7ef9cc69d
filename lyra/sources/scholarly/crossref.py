"""Crossref (``/works/{doi}``): the notices that update a paper — retractions, withdrawals, expressions of concern,
corrections — from its ``updated-by`` list, which carries both the publishers' own notices and the Retraction Watch
records Crossref has distributed since 2023 (``source: retraction-watch``).

Crossref asks polite clients to say who they are: the ``mailto`` parameter (and the User-Agent) name
``LYRA_CONTACT_EMAIL`` when it is set, which routes requests to the polite pool. A DOI Crossref does not know is a 404
(a plain-text body), read as "no record".
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from lyra.core.errors import SourceUnavailable
from lyra.sources.scholarly.http import ApiHttp
from lyra.sources.scholarly.papers import normalise_doi

log = logging.getLogger(__name__)

# Crossref update types, grouped by what they mean for evidence
RETRACTING = frozenset({"retraction", "withdrawal", "removal"})
CONCERNING = frozenset({"expression_of_concern", "partial_retraction"})
CORRECTING = frozenset({"correction", "corrigendum", "erratum", "addendum", "clarification"})


@dataclass(frozen=True)
class Notice:
    """One notice about a paper: Crossref's update ``kind``, its label, the notice's own DOI, its date and who
    recorded it (``publisher`` or ``retraction-watch``)."""

    kind: str
    label: str | None
    notice_doi: str | None
    date: str | None  # YYYY-MM-DD, YYYY-MM or YYYY
    source: str | None


def _date(value: object) -> str | None:
    if not isinstance(value, Mapping):
        return None
    parts = value.get("date-parts")
    if not isinstance(parts, list) or not parts or not isinstance(parts[0], list) or not parts[0]:
        return None
    numbers = [p for p in parts[0] if isinstance(p, int)]
    if not numbers:
        return None
    return "-".join([f"{numbers[0]:04d}", *(f"{n:02d}" for n in numbers[1:3])])


def notices_of(message: Mapping[str, Any]) -> list[Notice]:
    """The notices in a work's ``updated-by`` (malformed entries are skipped with a log line, never guessed)."""
    found: list[Notice] = []
    for entry in message.get("updated-by") or []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("type"), str):
            log.info("crossref: skipped a malformed updated-by entry: %r", entry)
            continue
        doi = entry.get("DOI")
        found.append(
            Notice(
                kind=entry["type"].strip().lower().replace("-", "_"),
                label=entry.get("label") if isinstance(entry.get("label"), str) else None,
                notice_doi=normalise_doi(doi) if isinstance(doi, str) else None,
                date=_date(entry.get("updated")),
                source=entry.get("source") if isinstance(entry.get("source"), str) else None,
            )
        )
    return found


class Crossref:
    """Client of Crossref's works API over one :class:`ApiHttp` (retries, rate limit, budget)."""

    name = "crossref"

    def __init__(self, http: ApiHttp) -> None:
        self.http = http

    def work(self, doi: str) -> dict[str, Any] | None:
        """The work's ``message``; None when Crossref has no record of the DOI."""
        key = normalise_doi(doi)
        if key is None:
            raise ValueError(f"not a DOI: {doi!r}")
        data = self.http.get(f"/works/{quote(key, safe='/:()')}")
        if data is None:
            return None
        message = data.get("message") if isinstance(data, Mapping) else None
        if not isinstance(message, dict):
            self.http.usage.add("errors")
            raise SourceUnavailable(f"crossref answered the work {key} with an unexpected shape: {str(data)[:120]}")
        return message

    def notices(self, doi: str) -> list[Notice] | None:
        """The paper's notices (empty: none); None when Crossref has no record of the DOI."""
        message = self.work(doi)
        return None if message is None else notices_of(message)
