"""A paper page's change marker: the abstract's hash ignores case and spacing (OpenAlex's rebuilt abstract and
Semantic Scholar's differ in spacing only) but not words; the comparison's verdicts (no store, no model)."""

from __future__ import annotations

from typing import Any

from lyra.services.paper_freshness import _compare, abstract_hash
from lyra.sources.scholarly import Paper


def stored(abstract: str | None, version: str | None = "2026-01-01") -> dict[str, Any]:
    return {"paper_hash": abstract_hash(abstract), "paper_version": version}


def test_the_hash_ignores_case_and_spacing_not_words() -> None:
    assert abstract_hash("Blood  pressure\nfell.") == abstract_hash("blood pressure fell.")
    assert abstract_hash("Blood pressure fell.") != abstract_hash("Blood pressure rose.")
    assert abstract_hash(None) is None and abstract_hash("  ") is None


def test_the_verdicts() -> None:
    same = Paper(title="T", abstract="Blood pressure fell.", updated="2026-01-01")
    moved = Paper(title="T", abstract="Blood pressure fell.", updated="2026-11-01")
    other = Paper(title="T", abstract="Blood pressure rose.", updated="2026-11-01")
    page = stored("Blood pressure fell.")
    assert _compare(page, same, [])[0] == "unchanged"
    assert _compare(page, moved, [])[0] == "new_version"
    assert _compare(page, other, [])[0] == "changed"
    assert _compare(page, other, ["semantic_scholar: HTTP 503"])[0] == "failed"
    assert _compare(stored(None, None), same, [])[0] == "first_check"
    assert _compare(page, Paper(title="T"), [])[0] == "failed"
    s2_only = Paper(title="T", abstract="Blood pressure fell.")  # no version: the hash decides
    assert _compare(stored("Blood pressure fell.", None), s2_only, [])[0] == "unchanged"
