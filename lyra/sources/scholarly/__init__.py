"""Scholarly API clients: Semantic Scholar's Graph API and OpenAlex, merged into one canonical index of papers.

``papers`` holds the shared vocabulary (identifiers, :class:`Paper`, :class:`PaperIndex`, :class:`Citation`);
``semantic_scholar`` and ``openalex`` are the two clients over one shared HTTP layer (``http``: retries, rate
limits, on-disk cache, counters, request budget); ``provider`` puts both together (:func:`build_sources`).
The local server speaking both APIs' shapes (tests, the offline demo, the benchmark) is a test double:
:mod:`lyra.testing.scholarly`.
"""

from lyra.sources.scholarly.openalex import OpenAlex, rebuild_abstract
from lyra.sources.scholarly.papers import (
    ApiName,
    Citation,
    Paper,
    PaperId,
    PaperIndex,
    find_identifiers,
    merge_papers,
    parse_identifier,
)
from lyra.sources.scholarly.provider import ScholarlySources, SourcesResult, build_sources
from lyra.sources.scholarly.semantic_scholar import SemanticScholar

__all__ = [
    "ApiName",
    "Citation",
    "OpenAlex",
    "Paper",
    "PaperId",
    "PaperIndex",
    "ScholarlySources",
    "SemanticScholar",
    "SourcesResult",
    "build_sources",
    "find_identifiers",
    "merge_papers",
    "parse_identifier",
    "rebuild_abstract",
]
