"""Whether papers were retracted, read fresh from two sources: Crossref's notices (publisher notices and the
Retraction Watch records it carries) and OpenAlex's ``is_retracted`` flag.

A paper is ``retracted`` when either source says so (a retraction, withdrawal or removal notice, or the flag); it
``has_concern`` for an expression of concern or a partial retraction, and is ``corrected`` for a correction, erratum
or addendum — those two are shown, never counted against the paper. ``none``: at least one source answered and
neither knows a notice; ``unknown``: no source could answer (the errors say why). Lookups never use the response
cache: a retraction is news.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import httpx

from lyra.core.errors import LyraError
from lyra.core.settings import ScholarlySettings
from lyra.sources.scholarly.crossref import CONCERNING, CORRECTING, RETRACTING, Crossref, Notice
from lyra.sources.scholarly.http import ApiHttp, RequestBudget, Usage, shared_limiter
from lyra.sources.scholarly.openalex import OpenAlex, retraction_flags
from lyra.sources.scholarly.papers import normalise_doi
from lyra.sources.scholarly.provider import http_client, openalex_http, polite_params, retry_policy

log = logging.getLogger(__name__)

RetractionState = Literal["retracted", "has_concern", "corrected", "none", "unknown"]


@dataclass(frozen=True)
class RetractionStatus:
    doi: str
    state: RetractionState
    notices: tuple[Notice, ...] = ()
    openalex_retracted: bool | None = None  # None: OpenAlex did not answer or does not know the DOI
    checked: tuple[str, ...] = ()  # the sources that answered
    errors: tuple[str, ...] = ()

    @property
    def retraction(self) -> Notice | None:
        return next((n for n in self.notices if n.kind in RETRACTING), None)


def state_of(notices: Sequence[Notice], openalex_retracted: bool | None, answered: bool) -> RetractionState:
    kinds = {n.kind for n in notices}
    if kinds & RETRACTING or openalex_retracted:
        return "retracted"
    if kinds & CONCERNING:
        return "has_concern"
    if kinds & CORRECTING:
        return "corrected"
    return "none" if answered else "unknown"


@dataclass
class RetractionChecker:
    """Both lookups over one client and one request budget. Close it (or use ``with``)."""

    crossref: Crossref | None
    openalex: OpenAlex | None
    _client: httpx.Client | None = None
    usage: dict[str, Usage] = field(default_factory=dict)

    def check(self, dois: Sequence[str]) -> dict[str, RetractionStatus]:
        """The status of each DOI (normalised, lower case); a DOI that is not one raises ValueError."""
        keys: list[str] = []
        for raw in dois:
            doi = normalise_doi(raw)
            if doi is None:
                raise ValueError(f"not a DOI: {raw!r}")
            keys.append(doi)
        keys = sorted(set(keys))
        flags: dict[str, bool] = {}
        openalex_error: str | None = None
        if self.openalex is not None and keys:
            try:
                flags = retraction_flags(self.openalex, keys)
            except LyraError as exc:
                openalex_error = f"openalex: {exc}"
                log.warning("retraction lookup: %s", openalex_error)
        result: dict[str, RetractionStatus] = {}
        for doi in keys:
            checked: list[str] = []
            errors: list[str] = [openalex_error] if openalex_error else []
            if self.openalex is not None and openalex_error is None:
                checked.append("openalex")
            notices: list[Notice] = []
            if self.crossref is not None:
                try:
                    found = self.crossref.notices(doi)
                    checked.append("crossref")
                    notices = found or []
                except LyraError as exc:
                    errors.append(f"crossref: {exc}")
                    log.warning("retraction lookup of %s: crossref: %s", doi, exc)
            retracted = flags.get(doi)
            result[doi] = RetractionStatus(
                doi=doi,
                state=state_of(notices, retracted, bool(checked)),
                notices=tuple(notices),
                openalex_retracted=retracted,
                checked=tuple(checked),
                errors=tuple(errors),
            )
        return result

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def __enter__(self) -> RetractionChecker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_retraction_checker(settings: ScholarlySettings, *, max_requests: int | None = None) -> RetractionChecker:
    """Crossref and OpenAlex clients for retraction lookups: one client, one budget, no response cache."""
    client = http_client(settings)
    budget = RequestBudget(max_requests)
    retry = retry_policy(settings)
    usage = {"crossref": Usage(), "openalex": Usage()}
    crossref = Crossref(
        ApiHttp(
            "crossref",
            settings.crossref_url,
            client,
            limiter=shared_limiter("crossref", settings.crossref_url, settings.crossref_requests_per_second),
            retry=retry,
            usage=usage["crossref"],
            budget=budget,
            params=polite_params(settings),
            key_hint="set LYRA_CONTACT_EMAIL: Crossref serves clients that name a contact from its polite pool",
        )
    )
    openalex = OpenAlex(openalex_http(settings, client, retry, budget, usage["openalex"], None))
    return RetractionChecker(crossref, openalex, client, usage)
