"""The scholarly clients against the replay server on 127.0.0.1: real sockets, real httpx, no mocks.

Waits are kept short through settings (tiny backoffs, sub-second Retry-After values, high rate limits except
where the rate limit itself is tested).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lyra.core.errors import BudgetExhausted, SourceUnavailable
from lyra.core.settings import Settings, load_settings
from lyra.sources.scholarly import Paper, PaperId, ScholarlySources, build_sources, parse_identifier
from lyra.sources.scholarly.semantic_scholar import FIELDS
from lyra.testing.scholarly import Corpus, ReplayServer, synthetic_corpus

DATA = Path(__file__).resolve().parents[2] / "data" / "scholarly"
CORPUS = Corpus.load(DATA / "corpus.json")
BY_ID = {p.id: p for p in CORPUS.papers}
HUB = BY_ID["hub"]


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer(CORPUS) as replay:
        yield replay


def sources_of(settings: Settings, **options: Any) -> ScholarlySources:
    """Both clients from the whole settings (the scholarly part and the response cache's file)."""
    return build_sources(settings.scholarly, settings.scholarly_cache_file, **options)


def make_settings(server: ReplayServer, tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        **server.settings_overrides(),
        "state_dir": tmp_path,
        "s2_requests_per_second": 500.0,
        "openalex_requests_per_second": 500.0,
        "scholarly_timeout_seconds": 2.0,
        "scholarly_max_attempts": 4,
        "scholarly_retry_initial_wait": 0.01,
        "scholarly_retry_max_wait": 2.0,
        "scholarly_retry_timeout": 10.0,
        "s2_api_key": "s2-test-key",
        "openalex_api_key": "oa-test-key",
        "contact_email": "tests@example.org",
    }
    values.update(overrides)
    return load_settings(**values)


@pytest.fixture
def sources(server: ReplayServer, tmp_path: Path) -> Iterator[ScholarlySources]:
    with sources_of(make_settings(server, tmp_path), page_size=5) as built:
        yield built


def hub_paper(sources: ScholarlySources) -> Paper:
    assert sources.s2 is not None
    paper = sources.s2.paper(PaperId("doi", HUB.doi.lower()))  # type: ignore[union-attr]
    assert paper is not None
    return paper


# --- Semantic Scholar ---------------------------------------------------------------------------------------------


def test_s2_search_pages_with_offset_and_next_and_asks_only_for_the_fields_it_uses(
    server: ReplayServer, sources: ScholarlySources
) -> None:
    assert sources.s2 is not None
    papers = sources.s2.search("caffeine sleep", limit=12)
    assert len(papers) == 12
    assert papers[0].title == HUB.title  # the hub's title holds both words
    calls = server.requests("semantic_scholar", "/paper/search")
    assert [(c.query["offset"], c.query["limit"]) for c in calls] == [("0", "5"), ("5", "5"), ("10", "2")]
    assert {c.query["fields"] for c in calls} == {FIELDS}
    assert "isInfluential" not in FIELDS


def test_s2_search_stops_when_next_is_absent(server: ReplayServer, sources: ScholarlySources) -> None:
    assert sources.s2 is not None
    papers = sources.s2.search("napping", limit=50)
    assert [p.title for p in papers] == ["Napping strategies for night shift workers"]
    assert len(server.requests("semantic_scholar")) == 1


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("10.5555/SLEEP.2019.0042", "hub"),
        ("PMID:19000003", "ref3"),
        ("arXiv:1503.01234v2", "ref2"),
        (BY_ID["cit0"].s2_id, "cit0"),
    ],
)
def test_s2_paper_looks_up_dois_pmids_arxiv_and_s2_ids(sources: ScholarlySources, typed: str, expected: str) -> None:
    assert sources.s2 is not None
    pid = parse_identifier(typed or "")
    assert pid is not None
    paper = sources.s2.paper(pid)
    assert paper is not None and paper.title == BY_ID[expected].title
    assert paper.sources == ("semantic_scholar",)


def test_s2_paper_reads_every_field_lyra_keeps(sources: ScholarlySources) -> None:
    paper = hub_paper(sources)
    assert paper.doi == "10.5555/sleep.2019.0042" and paper.pmid == "31234567" and paper.s2_id == HUB.s2_id
    assert paper.authors == tuple(HUB.authors) and paper.year == 2019 and paper.venue == "Sleep Medicine"
    assert paper.citation_count == 57 and paper.pdf_url == HUB.pdf_url and paper.abstract == HUB.abstract


def test_s2_unknown_paper_is_none_and_an_openalex_id_sends_nothing(
    server: ReplayServer, sources: ScholarlySources
) -> None:
    assert sources.s2 is not None
    assert sources.s2.paper(PaperId("doi", "10.9999/unknown")) is None
    assert sources.s2.paper(PaperId("openalex", "W3001000001")) is None
    assert len(server.requests("semantic_scholar")) == 1
    assert sources.usage()["semantic_scholar"]["errors"] == 0


def test_s2_batch_keeps_the_order_with_none_for_unknown_ids(server: ReplayServer, sources: ScholarlySources) -> None:
    assert sources.s2 is not None
    ids = [
        PaperId("doi", "10.5555/ref.2011.001"),
        PaperId("doi", "10.9999/unknown"),
        PaperId("openalex", "W3001000001"),
        PaperId("pmid", "31234567"),
    ]
    papers = sources.s2.papers(ids)
    assert [p.title if p else None for p in papers] == [BY_ID["ref1"].title, None, None, HUB.title]
    (call,) = server.requests("semantic_scholar", "/paper/batch")
    assert call.method == "POST"
    assert json.loads(call.body) == {"ids": ["DOI:10.5555/ref.2011.001", "DOI:10.9999/unknown", "PMID:31234567"]}


def test_s2_batch_splits_more_than_500_ids(server: ReplayServer, sources: ScholarlySources) -> None:
    assert sources.s2 is not None
    ids = [PaperId("doi", f"10.9999/n{i}") for i in range(501)]
    assert sources.s2.papers(ids) == [None] * 501
    assert [len(json.loads(c.body)["ids"]) for c in server.requests("semantic_scholar", "/paper/batch")] == [500, 1]


def test_s2_references_page_through_offset_and_next(server: ReplayServer, sources: ScholarlySources) -> None:
    assert sources.s2 is not None
    refs = sources.s2.references(hub_paper(sources), limit=100)
    assert [p.title for p in refs] == [BY_ID[r].title for r in HUB.references]
    unresolved = refs[HUB.references.index("ref6")]  # only in OpenAlex: S2 lists it without an id
    assert unresolved.s2_id is None and unresolved.authors == ()
    pages = server.requests("semantic_scholar", f"/paper/{HUB.s2_id}/references")
    assert [c.query["offset"] for c in pages] == ["0", "5", "10"]
    assert sources.s2.references(hub_paper(sources), limit=7) == refs[:7]


def test_s2_citations_list_the_citing_papers_s2_knows(sources: ScholarlySources) -> None:
    assert sources.s2 is not None
    citing = sources.s2.citations(hub_paper(sources))
    assert {p.title for p in citing} == {p.title for p in CORPUS.papers if "hub" in p.references and p.s2_id}


def test_s2_sends_the_key_header_and_a_polite_user_agent(server: ReplayServer, sources: ScholarlySources) -> None:
    hub_paper(sources)
    (call,) = server.requests("semantic_scholar")
    assert call.headers["x-api-key"] == "s2-test-key"
    assert call.headers["user-agent"].startswith("Lyra/") and "tests@example.org" in call.headers["user-agent"]


# --- OpenAlex -----------------------------------------------------------------------------------------------------


def test_openalex_search_pages_by_number_and_sends_mailto_and_key(
    server: ReplayServer, sources: ScholarlySources
) -> None:
    assert sources.openalex is not None
    papers = sources.openalex.search("caffeine sleep", limit=8)
    assert len(papers) == 8 and papers[0].title == HUB.title
    assert all(p.sources == ("openalex",) for p in papers)
    calls = server.requests("openalex", "/works")
    assert [(c.query["page"], c.query["per_page"]) for c in calls] == [("1", "5"), ("2", "5")]
    assert {c.query["mailto"] for c in calls} == {"tests@example.org"}
    assert {c.query["api_key"] for c in calls} == {"oa-test-key"}


@pytest.mark.parametrize("typed", ["W3001000001", "10.5555/sleep.2019.0042", "PMID:31234567"])
def test_openalex_paper_by_id_doi_or_pmid_uses_the_singleton_route(
    server: ReplayServer, sources: ScholarlySources, typed: str
) -> None:
    assert sources.openalex is not None
    pid = parse_identifier(typed)
    assert pid is not None
    paper = sources.openalex.paper(pid)
    assert paper is not None and paper.openalex_id == "W3001000001" and paper.abstract == HUB.abstract
    assert paper.doi == "10.5555/sleep.2019.0042" and paper.venue == "Sleep Medicine"
    (call,) = server.requests("openalex")
    assert call.path.startswith("/works/")


def test_openalex_unknown_work_is_none(sources: ScholarlySources) -> None:
    assert sources.openalex is not None
    assert sources.openalex.paper(PaperId("openalex", "W1")) is None
    assert sources.openalex.paper(PaperId("s2", "a" * 40)) is None


def test_openalex_batch_uses_one_filter_per_id_kind(server: ReplayServer, sources: ScholarlySources) -> None:
    assert sources.openalex is not None
    ids = [
        PaperId("openalex", "W3001000103"),
        PaperId("doi", "10.5555/ref.2011.001"),
        PaperId("openalex", "W999"),
        PaperId("s2", "b" * 40),
        PaperId("pmid", "31234567"),
    ]
    papers = sources.openalex.papers(ids)
    assert [p.title if p else None for p in papers] == [BY_ID["ref3"].title, BY_ID["ref1"].title, None, None, HUB.title]
    filters = sorted(c.query["filter"] for c in server.requests("openalex", "/works"))
    assert filters == [
        "doi:https://doi.org/10.5555/ref.2011.001",
        "openalex_id:W3001000103|W999",
        "pmid:31234567",
    ]


def test_openalex_references_are_the_first_20_resolved_in_one_filter_call(tmp_path: Path) -> None:
    corpus = synthetic_corpus(sources=1, candidates_per_source=80, seed=3)  # the source cites 40 candidates
    source = corpus.papers[0]
    with ReplayServer(corpus) as replay, sources_of(make_settings(replay, tmp_path)) as built:
        assert built.openalex is not None
        refs = built.openalex.references(Paper(title=source.title, openalex_id=source.openalex_id))
        cited_in_openalex = [r for r in source.references if corpus.papers[0] and r in _oa_ids(corpus)]
        assert [p.openalex_id for p in refs] == [_oa_ids(corpus)[r] for r in cited_in_openalex[:20]]
        calls = replay.requests("openalex")
        assert len(calls) == 2  # the work's referenced_works, then ONE filter for the first 20
        assert calls[1].query["filter"].count("|") == 19


def _oa_ids(corpus: Corpus) -> dict[str, str]:
    return {p.id: p.openalex_id for p in corpus.papers if p.openalex_id}


def test_openalex_citations_page_through_cites_filter(server: ReplayServer, sources: ScholarlySources) -> None:
    assert sources.openalex is not None
    citing = sources.openalex.citations(Paper(title=HUB.title, doi="10.5555/sleep.2019.0042"))
    expected = {p.title for p in CORPUS.papers if "hub" in p.references and p.openalex_id}
    assert {p.title for p in citing} == expected and len(citing) == len(expected)
    pages = [c for c in server.requests("openalex") if c.path == "/works"]
    assert [c.query["page"] for c in pages] == ["1", "2"]
    assert {c.query["filter"] for c in pages} == {"cites:W3001000001"}


# --- retries, errors, rate limits, cache, budget -----------------------------------------------------------------


def test_a_429_storm_waits_as_long_as_retry_after_says(server: ReplayServer, sources: ScholarlySources) -> None:
    server.inject(api="semantic_scholar", status=429, retry_after=0.3, times=2)
    started = time.monotonic()
    paper = hub_paper(sources)
    elapsed = time.monotonic() - started
    assert paper.title == HUB.title
    assert 0.6 <= elapsed < 1.5
    stamps = [c.time for c in server.requests("semantic_scholar")]
    assert len(stamps) == 3
    assert all(0.28 <= b - a < 0.6 for a, b in itertools.pairwise(stamps))
    usage = sources.usage()["semantic_scholar"]
    assert (usage["requests"], usage["retries"], usage["rate_limited"], usage["errors"]) == (3, 2, 2, 0)


def test_a_5xx_is_retried_then_succeeds(server: ReplayServer, sources: ScholarlySources) -> None:
    server.inject(api="openalex", status=503, times=1)
    assert sources.openalex is not None
    assert sources.openalex.paper(PaperId("openalex", "W3001000001")) is not None
    assert sources.usage()["openalex"]["retries"] == 1


def test_exhausted_retries_raise_source_unavailable_naming_the_api(
    server: ReplayServer, sources: ScholarlySources
) -> None:
    server.inject(api="semantic_scholar", status=503)
    with pytest.raises(SourceUnavailable, match=r"semantic_scholar unavailable: 503 after 4 attempts"):
        hub_paper(sources)
    assert len(server.requests("semantic_scholar")) == 4
    assert sources.usage()["semantic_scholar"]["errors"] == 1


def test_a_retry_after_longer_than_the_longest_wait_gives_up_at_once(
    server: ReplayServer, sources: ScholarlySources
) -> None:
    server.inject(api="semantic_scholar", status=429, retry_after=3600)
    started = time.monotonic()
    with pytest.raises(SourceUnavailable, match=r"429 after 1 attempt \(Retry-After 3600 s"):
        hub_paper(sources)
    assert time.monotonic() - started < 1.0


def test_malformed_json_is_a_clear_error(server: ReplayServer, sources: ScholarlySources) -> None:
    server.inject(api="openalex", malformed=True, times=1)
    assert sources.openalex is not None
    with pytest.raises(SourceUnavailable, match=r"openalex answered GET /works/W3001000001 with malformed JSON"):
        sources.openalex.paper(PaperId("openalex", "W3001000001"))
    # not cached: the next call asks again and gets the real answer
    assert sources.openalex.paper(PaperId("openalex", "W3001000001")) is not None


def test_a_slow_answer_becomes_a_timeout_error(server: ReplayServer, tmp_path: Path) -> None:
    server.inject(api="semantic_scholar", delay=1.0)
    settings = make_settings(server, tmp_path, scholarly_timeout_seconds=0.2, scholarly_max_attempts=2)
    with sources_of(settings) as built, pytest.raises(SourceUnavailable, match=r"no answer in time after 2"):
        hub_paper(built)


def test_requests_never_exceed_the_rate_limit_even_from_several_threads(server: ReplayServer, tmp_path: Path) -> None:
    settings = make_settings(server, tmp_path, s2_requests_per_second=10.0, scholarly_cache_ttl_seconds=0)
    with sources_of(settings) as built:
        s2 = built.s2
        assert s2 is not None
        threads = [
            threading.Thread(target=lambda i=i: s2.paper(PaperId("doi", f"10.5555/ref.x.{i}"))) for i in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    stamps = sorted(c.time for c in server.requests("semantic_scholar"))
    assert len(stamps) == 8
    # 10/s: the limiter lets requests go 100 ms apart (tests/unit/sources/test_scholarly_parsing.py checks that
    # exactly); measured at the server, scheduling jitter on a busy machine lands on single gaps, so any five
    # consecutive arrivals span at least 0.4 s less 50 ms, and no two arrive closer than half the interval
    assert all(later - earlier >= 0.4 - 0.05 for earlier, later in zip(stamps, stamps[4:], strict=False)), stamps
    assert min(b - a for a, b in itertools.pairwise(stamps)) >= 0.05


def test_a_rerun_is_served_from_the_cache_without_a_request(server: ReplayServer, tmp_path: Path) -> None:
    settings = make_settings(server, tmp_path)
    with sources_of(settings, page_size=5) as first:
        first.search("caffeine sleep", 8)
        first.neighbours(hub_paper(first), "both", 50)
    sent = len(server.requests())
    with sources_of(settings, page_size=5) as second:
        second.search("caffeine sleep", 8)
        second.neighbours(hub_paper(second), "both", 50)
        usage = second.usage()
    assert len(server.requests()) == sent
    assert usage["semantic_scholar"]["requests"] == usage["openalex"]["requests"] == 0
    assert usage["semantic_scholar"]["cache_hits"] > 0 and usage["openalex"]["cache_hits"] > 0


def test_the_cache_keys_post_bodies(server: ReplayServer, sources: ScholarlySources) -> None:
    assert sources.s2 is not None
    a = sources.s2.papers([PaperId("pmid", "31234567")])
    b = sources.s2.papers([PaperId("pmid", "19000003")])
    assert a[0] is not None and b[0] is not None and a[0].title != b[0].title
    assert sources.s2.papers([PaperId("pmid", "19000003")]) == b
    assert len(server.requests("semantic_scholar", "/paper/batch")) == 2


def test_a_cached_answer_expires_after_the_ttl(server: ReplayServer, tmp_path: Path) -> None:
    with sources_of(make_settings(server, tmp_path, scholarly_cache_ttl_seconds=0.3)) as built:
        hub_paper(built)
        hub_paper(built)
        assert len(server.requests()) == 1
        time.sleep(0.4)
        hub_paper(built)
        assert len(server.requests()) == 2


def test_the_request_budget_refuses_to_send_but_cached_answers_still_come(server: ReplayServer, tmp_path: Path) -> None:
    with sources_of(make_settings(server, tmp_path), max_requests=2) as built:
        assert built.s2 is not None and built.openalex is not None
        hub_paper(built)
        built.openalex.paper(PaperId("openalex", "W3001000001"))
        with pytest.raises(BudgetExhausted, match=r"budget used up \(2 requests\); semantic_scholar request not"):
            built.s2.paper(PaperId("pmid", "19000003"))
        assert hub_paper(built).title == HUB.title  # from the cache
    assert len(server.requests()) == 2


# --- both APIs together -------------------------------------------------------------------------------------------


def test_search_merges_both_apis_into_canonical_papers(sources: ScholarlySources) -> None:
    result = sources.search("caffeine sleep", 10)
    assert result.warnings == []
    assert len(result.value) == 10
    assert len({p.key() for p in result.value}) == 10
    assert result.value[0].title == HUB.title and result.value[0].sources == ("semantic_scholar", "openalex")


def test_resolve_fills_a_missing_abstract_from_openalex(sources: ScholarlySources) -> None:
    result = sources.resolve(PaperId("doi", "10.5555/ref.2012.008"))  # S2 lacks this abstract
    paper = result.value
    assert paper is not None and paper.abstract == BY_ID["ref8"].abstract
    assert paper.s2_id == BY_ID["ref8"].s2_id and paper.openalex_id == BY_ID["ref8"].openalex_id
    assert paper.sources == ("semantic_scholar", "openalex") and result.warnings == []


def test_resolve_asks_openalex_for_its_id_and_an_openalex_id_asks_only_openalex(
    server: ReplayServer, sources: ScholarlySources
) -> None:
    paper = sources.resolve(PaperId("doi", "10.5555/sleep.2019.0042")).value
    assert paper is not None and paper.openalex_id == "W3001000001"
    assert len(server.requests("openalex")) == 1
    server.clear_log()
    result = sources.resolve(PaperId("openalex", "W3001000001"))  # S2 cannot look up an OpenAlex id
    assert result.value is not None and server.requests("semantic_scholar") == []


def test_resolve_serves_from_openalex_with_a_warning_when_s2_is_down(
    server: ReplayServer, sources: ScholarlySources
) -> None:
    server.inject(api="semantic_scholar", status=503)
    result = sources.resolve(PaperId("doi", "10.5555/sleep.2019.0042"))
    assert result.value is not None and result.value.sources == ("openalex",)
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith("semantic_scholar unavailable: 503 after 4 attempts")
    assert result.warnings[0].endswith("results from openalex only")


def test_neighbours_merge_both_apis_and_prefer_s2_on_ties(sources: ScholarlySources) -> None:
    hub = hub_paper(sources)
    result = sources.neighbours(hub, "both", 100)
    assert result.warnings == []
    cited = {c.cited.title for c in result.value if c.citing.key() == hub.key()}
    citing = {c.citing.title for c in result.value if c.cited.key() == hub.key()}
    assert cited == {BY_ID[r].title for r in HUB.references}
    assert citing == {p.title for p in CORPUS.papers if "hub" in p.references}
    assert len(result.value) == len(HUB.references) + len(citing)
    by_title = {c.citing.title if c.cited.key() == hub.key() else c.cited.title: c for c in result.value}
    assert by_title[BY_ID["ref1"].title].source == "semantic_scholar"
    assert by_title[BY_ID["ref1"].title].cited.sources == ("semantic_scholar", "openalex")
    assert by_title[BY_ID["cit5"].title].source == "openalex"  # only OpenAlex knows that citing paper
    ref6 = by_title[BY_ID["ref6"].title].cited  # S2's bare reference merged with OpenAlex's record
    assert ref6.openalex_id == BY_ID["ref6"].openalex_id and ref6.authors == tuple(BY_ID["ref6"].authors)


def test_neighbours_in_one_direction(sources: ScholarlySources) -> None:
    hub = hub_paper(sources)
    refs = sources.neighbours(hub, "references", 100).value
    assert refs and all(c.citing.key() == hub.key() for c in refs)
    cits = sources.neighbours(hub, "citations", 100).value
    assert cits and all(c.cited.key() == hub.key() for c in cits)


def test_one_api_down_gives_the_others_results_with_a_warning(server: ReplayServer, sources: ScholarlySources) -> None:
    server.inject(api="openalex", status=503)
    result = sources.search("caffeine sleep", 5)
    assert len(result.value) == 5 and all(p.sources == ("semantic_scholar",) for p in result.value)
    assert result.warnings == [
        "openalex unavailable: 503 after 4 attempts (GET /works); results from semantic_scholar only"
    ]


def test_both_apis_down_raise_naming_both(server: ReplayServer, sources: ScholarlySources) -> None:
    server.inject(status=500)
    both = r"no scholarly API answered \(semantic_scholar unavailable: 500 .*; openalex unavailable: 500 .*\)"
    with pytest.raises(SourceUnavailable, match=both):
        sources.search("caffeine", 5)
    usage = sources.usage()
    assert usage["semantic_scholar"]["errors"] == 1 and usage["openalex"]["errors"] == 1


def test_only_the_configured_api_is_used(server: ReplayServer, tmp_path: Path) -> None:
    with sources_of(make_settings(server, tmp_path), openalex=False) as built:
        assert built.search("caffeine", 3).value
        assert list(built.usage()) == ["semantic_scholar"]
    assert server.requests("openalex") == []


# --- the replay server itself -------------------------------------------------------------------------------------


def test_replay_s2_answers_only_the_fields_asked_for_and_real_404_bodies(server: ReplayServer) -> None:
    with httpx.Client(base_url=server.s2_url) as client:
        answer = client.get(f"/paper/{HUB.s2_id}", params={"fields": "title,externalIds"}).json()
        assert set(answer) == {"paperId", "title", "externalIds"}
        assert answer["externalIds"]["DOI"] == HUB.doi and answer["externalIds"]["PubMed"] == HUB.pmid
        missing = client.get("/paper/DOI:10.9999/none", params={"fields": "title"})
        assert missing.status_code == 404 and missing.json() == {"error": "Paper with id DOI:10.9999/none not found"}
        bad = client.get(f"/paper/{HUB.s2_id}", params={"fields": "title,isInfluential"})
        assert bad.status_code == 400
        last = client.get(f"/paper/{HUB.s2_id}/references", params={"fields": "title", "offset": 10, "limit": 5})
        assert "next" not in last.json() and len(last.json()["data"]) == 2


def test_replay_openalex_answers_work_urls_and_meta(server: ReplayServer) -> None:
    with httpx.Client(base_url=server.openalex_url) as client:
        work = client.get("/works/https://doi.org/10.5555/SLEEP.2019.0042").json()
        assert work["id"] == "https://openalex.org/W3001000001"
        assert work["doi"] == "https://doi.org/10.5555/Sleep.2019.0042"
        assert work["referenced_works"][0] == f"https://openalex.org/{BY_ID['ref0'].openalex_id}"
        assert work["ids"]["pmid"] == "https://pubmed.ncbi.nlm.nih.gov/31234567"
        listing = client.get("/works", params={"filter": "cites:W3001000001", "per_page": 2, "select": "id"}).json()
        assert listing["meta"]["count"] == 6 and listing["meta"]["per_page"] == 2
        assert all(set(w) == {"id"} for w in listing["results"])


def test_replay_runs_as_a_module_and_takes_faults_over_http(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "lyra.testing.scholarly", "--corpus", str(DATA / "corpus.json")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    try:
        assert process.stdout is not None
        s2_url = process.stdout.readline().strip().removeprefix("LYRA_S2_URL=")
        base = s2_url.removesuffix("/graph/v1")
        with httpx.Client(base_url=base, timeout=5) as client:
            assert client.get(f"/graph/v1/paper/PMID:{HUB.pmid}").json()["title"] == HUB.title
            client.post("/_replay/faults", json={"api": "semantic_scholar", "status": 503, "times": 1})
            assert client.get(f"/graph/v1/paper/PMID:{HUB.pmid}").status_code == 503
            log = client.get("/_replay/log").json()
            assert [entry["status"] for entry in log] == [200, 503]
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def test_without_an_openalex_key_one_warning_is_logged_and_no_key_is_sent(
    server: ReplayServer, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lyra.sources.scholarly import openalex

    monkeypatch.setattr(openalex, "_keyless_warned", False)
    with caplog.at_level("WARNING", logger="lyra.sources.scholarly.openalex"):
        for _ in range(2):
            with sources_of(make_settings(server, tmp_path, openalex_api_key=None)) as built:
                assert built.openalex is not None
                built.openalex.paper(PaperId("openalex", "W3001000001"))
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "keyless" in caplog.records[0].message
    assert "api_key" not in server.requests("openalex")[0].query


def test_a_refused_key_is_an_error_with_a_hint(server: ReplayServer, tmp_path: Path) -> None:
    server.inject(api="semantic_scholar", status=403)
    refused = r"semantic_scholar refused GET /paper/DOI:10.5555/sleep"
    with (
        sources_of(make_settings(server, tmp_path, s2_api_key=None)) as built,
        pytest.raises(SourceUnavailable, match=refused) as info,
    ):
        hub_paper(built)
    assert info.value.hint is not None and "LYRA_S2_API_KEY" in info.value.hint
    assert len(server.requests()) == 1  # a 403 is not retried


def test_a_budget_running_out_midway_keeps_what_was_fetched_with_a_warning(
    server: ReplayServer, tmp_path: Path
) -> None:
    with sources_of(make_settings(server, tmp_path), max_requests=2) as built:
        hub = hub_paper(built)  # request 1
        result = built.neighbours(hub, "both", 100)  # S2 references (request 2), then the budget stops everything
    assert {c.cited.title for c in result.value} == {BY_ID[r].title for r in HUB.references}
    assert len(result.warnings) == 2
    assert all("budget used up (2 requests)" in w and w.endswith("partial results") for w in result.warnings)


def test_a_budget_used_up_before_anything_answers_raises_budget_exhausted(server: ReplayServer, tmp_path: Path) -> None:
    with sources_of(make_settings(server, tmp_path), max_requests=0) as built, pytest.raises(BudgetExhausted):
        built.search("caffeine", 5)
    assert server.requests() == []
