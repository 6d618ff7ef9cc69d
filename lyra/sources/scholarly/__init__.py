"""Scholarly API clients: Semantic Scholar's Graph API and OpenAlex, merged into one canonical index of papers.

``papers`` holds the shared vocabulary (identifiers, :class:`Paper`, :class:`PaperIndex`, :class:`Citation`);
``semantic_scholar`` and ``openalex`` are the two clients over one shared HTTP layer (``http``: retries, rate
limits, on-disk cache, counters, request budget); ``provider`` puts both together (:func:`build_sources`);
``replay`` is a local server speaking both APIs' shapes for tests, the offline demo and the benchmark.
"""

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

__all__ = [
    "ApiName",
    "Citation",
    "Paper",
    "PaperId",
    "PaperIndex",
    "find_identifiers",
    "merge_papers",
    "parse_identifier",
]
