"""Independent sources: how many distinct sources stand behind a claim's supporting evidence.

A claim's SUPPORTS edges each come from one fragment; a fragment sits on one or more of the task's pages (an exact
copy of a passage is one fragment on several pages, and ingest links a near-duplicate passage to the fragment it
repeats instead of storing a second one). Two supporting edges come from the same source when they are connected by
any of:

* the same fragment (the same passage, or a near duplicate of it, wherever it was read);
* the same page;
* pages with the same DOI (case-insensitive);
* pages with the same title and year (title compared in lower case, letters and digits only, words in order).

``independent_sources`` is the number of connected groups. A supporting fragment on none of the task's pages (a
graph written by hand) is a source of its own. The count never exceeds the number of SUPPORTS edges, and is at
least 1 when there is one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MIN_TITLE_CHARS = 12  # a shorter title (a file name, "Results") is too common to identify a paper


def title_key(title: str | None, year: int | None) -> str | None:
    """``title|year`` in a comparable form, or None when either is missing or the title is too short to tell."""
    if not title or year is None:
        return None
    words = " ".join(_WORD.findall(title.lower()))
    if len(words) < MIN_TITLE_CHARS:
        return None
    return f"{words}|{year}"


def source_keys(page: Sequence[Any]) -> list[str]:
    """The identity keys of one page given as ``[page_id, doi, title, year]``."""
    page_id, doi, title, year = page[0], page[1], page[2], page[3]
    keys = [f"page:{page_id}"]
    if doi:
        keys.append(f"doi:{str(doi).strip().lower()}")
    by_title = title_key(title, year)
    if by_title:
        keys.append(f"title:{by_title}")
    return keys


def independent_sources(supporting: Iterable[Sequence[Any]]) -> int:
    """The number of independent sources among supporting edges given as ``[fragment_id, [[page_id, doi, title,
    year], ...]]`` (module docstring)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra

    fragments: set[str] = set()
    for item in supporting:
        fragment = f"fragment:{item[0]}"
        fragments.add(fragment)
        find(fragment)
        for page in item[1] or []:
            for key in source_keys(page):
                union(fragment, key)
    return len({find(f) for f in fragments})
