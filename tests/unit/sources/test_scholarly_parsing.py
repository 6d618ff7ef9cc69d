"""Reading the APIs' answers, and the HTTP layer's small parts (cache, budget, limiter, Retry-After), no network."""

from __future__ import annotations

import itertools
import json
import threading
import time
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest

from lyra.core.errors import BudgetExhausted
from lyra.core.settings import load_settings
from lyra.sources.scholarly import rebuild_abstract
from lyra.sources.scholarly.http import RateLimiter, RequestBudget, ResponseCache, parse_retry_after, user_agent
from lyra.sources.scholarly.openalex import paper_from_openalex
from lyra.sources.scholarly.semantic_scholar import paper_from_s2
from lyra.testing.scholarly import Corpus, inverted_index, synthetic_corpus

DATA = Path(__file__).resolve().parents[2] / "data" / "scholarly"


def _load(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def test_rebuild_abstract_puts_words_back_in_position_order() -> None:
    assert rebuild_abstract({"sleep.": [3], "Caffeine": [0], "reduces": [1], "the": [2, 4], "end": [5]}) == (
        "Caffeine reduces the sleep. the end"
    )
    assert rebuild_abstract(None) is None
    assert rebuild_abstract({}) is None


def test_inverted_index_and_rebuild_round_trip() -> None:
    text = "We found that caffeine , in the evening , delays sleep and the effect of caffeine lasts ."
    assert rebuild_abstract(inverted_index(text)) == text


def test_paper_from_s2_reads_ids_authors_and_the_pdf() -> None:
    paper = paper_from_s2(_load("s2_paper.json"))
    assert paper is not None
    assert paper.doi == "10.5555/sleep.2019.0042"
    assert paper.pmid == "31234567"
    assert paper.s2_id == "f4386b43d4d41aa9929f39ef58fb53a587458408"
    assert paper.authors == ("Ana Okafor", "J. Larsen")
    assert (paper.year, paper.citation_count, paper.venue) == (2019, 57, "Sleep Medicine")
    assert paper.pdf_url == "https://example.org/pdf/hub.pdf"
    assert paper.sources == ("semantic_scholar",)


def test_paper_from_s2_keeps_unresolved_references_as_bare_titles_and_empty_venues_as_none() -> None:
    page = _load("s2_references_page.json")
    first, bare = (paper_from_s2(item["citedPaper"]) for item in page["data"])
    assert first is not None and bare is not None
    assert first.arxiv_id == "1503.01234" and first.venue is None and first.pdf_url is None
    assert bare.s2_id is None and bare.title == "Energy drinks, caffeine and adolescent sleep" and bare.authors == ()
    assert paper_from_s2({"paperId": "x", "title": None}) is None


def test_paper_from_openalex_reads_urls_as_ids_and_rebuilds_the_abstract() -> None:
    paper = paper_from_openalex(_load("openalex_work.json"))
    assert paper is not None
    assert paper.openalex_id == "W3001000001"
    assert paper.doi == "10.5555/sleep.2019.0042"
    assert paper.pmid == "31234567"
    assert paper.abstract == "Caffeine is widely used by shift workers. We randomised 240 nurses."
    assert paper.authors == ("Ana Okafor", "Jonas Larsen")
    assert (paper.year, paper.citation_count, paper.venue) == (2019, 61, "Sleep Medicine")
    assert paper.pdf_url == "https://repository.example.org/hub.pdf"
    assert paper.sources == ("openalex",)


def test_paper_from_openalex_takes_the_arxiv_id_from_arxivs_doi() -> None:
    work = {"id": "https://openalex.org/W1", "title": "T", "doi": "https://doi.org/10.48550/arXiv.2101.00001"}
    paper = paper_from_openalex(work)
    assert paper is not None and paper.arxiv_id == "2101.00001" and paper.doi == "10.48550/arxiv.2101.00001"


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    later = parse_retry_after(formatdate(time.time() + 30, usegmt=True))
    assert later is not None and 25 <= later <= 31


def test_response_cache_serves_until_the_ttl_then_forgets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite", ttl_seconds=60)
    key = ResponseCache.key("openalex", "GET", "http://x/works", {"b": "2", "a": "1"}, None)
    assert key == ResponseCache.key("openalex", "GET", "http://x/works", {"a": "1", "b": "2"}, None)
    assert key != ResponseCache.key("openalex", "POST", "http://x/works", {"a": "1", "b": "2"}, {"ids": ["1"]})
    assert cache.get(key) is None
    cache.put(key, 200, '{"ok": true}')
    assert cache.get(key) == (200, '{"ok": true}')
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + 61)
    assert cache.get(key) is None
    cache.close()


def test_a_write_only_response_cache_answers_nothing_and_keeps_every_fresh_answer(tmp_path: Path) -> None:
    """A refresh's re-check reads fresh and refreshes the cache, so the re-read job reads what the check saw."""
    path = tmp_path / "c.sqlite"
    key = ResponseCache.key("openalex", "GET", "http://x/works/W1", {}, None)
    reader = ResponseCache(path, ttl_seconds=60)
    reader.put(key, 200, '{"abstract": "old"}')
    checker = ResponseCache(path, ttl_seconds=60, read=False)
    assert checker.get(key) is None
    checker.put(key, 200, '{"abstract": "new"}')
    assert reader.get(key) == (200, '{"abstract": "new"}')
    checker.close()
    reader.close()


def test_request_budget_refuses_the_request_past_the_limit() -> None:
    budget = RequestBudget(2)
    budget.take("semantic_scholar")
    budget.take("openalex")
    with pytest.raises(BudgetExhausted, match=r"budget used up \(2 requests\); openalex request not sent"):
        budget.take("openalex")
    RequestBudget(None).take("openalex")


def test_rate_limiter_spaces_callers_from_several_threads() -> None:
    limiter = RateLimiter(per_second=50)  # 20 ms apart
    went: list[float] = []
    lock = threading.Lock()

    def call() -> None:
        cleared = limiter.acquire()  # the moment this caller was let go, taken under the limiter's lock
        with lock:
            went.append(cleared)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    went.sort()
    assert min(b - a for a, b in itertools.pairwise(went)) >= limiter.interval


def test_settings_name_the_scholarly_environment_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LYRA_S2_API_KEY", "k-123")
    monkeypatch.setenv("LYRA_OPENALEX_API_KEY", "")
    monkeypatch.setenv("LYRA_CONTACT_EMAIL", "me@example.org")
    monkeypatch.setenv("LYRA_S2_REQUESTS_PER_SECOND", "0.5")
    settings = load_settings(state_dir=tmp_path)
    assert settings.scholarly.s2_api_key is not None and settings.scholarly.s2_api_key.get_secret_value() == "k-123"
    assert settings.scholarly.openalex_api_key is None
    assert settings.scholarly.s2_requests_per_second == 0.5
    assert settings.scholarly.s2_url == "https://api.semanticscholar.org/graph/v1"
    assert settings.scholarly.openalex_url == "https://api.openalex.org"
    assert settings.scholarly_cache_file == tmp_path / "cache" / "scholarly.sqlite"
    assert "mailto:me@example.org" in user_agent(settings.scholarly.contact_email)


def test_the_fixture_corpus_and_the_synthetic_corpus_validate() -> None:
    corpus = Corpus.load(DATA / "corpus.json")
    assert len(corpus.papers) == 20
    synthetic = synthetic_corpus(sources=3, candidates_per_source=40, seed=7)
    assert len(synthetic.papers) == 3 * 41
    assert synthetic == synthetic_corpus(sources=3, candidates_per_source=40, seed=7)
    candidates = [p for p in synthetic.papers if "-c" in p.id]
    assert any(p.abstract is None for p in candidates)
    assert any(p.doi is None for p in candidates)
    assert any(p.s2_id is None for p in candidates) and any(p.openalex_id is None for p in candidates)
    assert all(len(p.references) == 20 for p in synthetic.papers if "-c" not in p.id)
