"""Retraction lookups against the replay server on 127.0.0.1 (Crossref's and OpenAlex's shapes): real sockets, real
httpx. A paper is retracted between two lookups; a retraction recorded by Retraction Watch only, an expression of
concern and a correction are told apart; one source failing leaves the other's answer; the polite pool's mailto is
sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lyra.core.settings import load_settings
from lyra.sources.scholarly.retractions import RetractionChecker, build_retraction_checker
from lyra.testing.scholarly import Corpus, CorpusPaper, CorpusUpdate, ReplayServer

PAPERS = [
    CorpusPaper(id="plain", title="A plain trial", doi="10.5555/plain", openalex_id="W1"),
    CorpusPaper(id="later", title="A trial retracted later", doi="10.5555/later", openalex_id="W2"),
    CorpusPaper(
        id="rw",
        title="Retracted per Retraction Watch only",
        doi="10.5555/rw",
        updates=[
            CorpusUpdate(
                type="retraction", notice_doi="10.5555/rw.notice", date="2024-03-05", source="retraction-watch"
            )
        ],
    ),
    CorpusPaper(
        id="concern",
        title="Under an expression of concern",
        doi="10.5555/concern",
        openalex_id="W4",
        updates=[CorpusUpdate(type="expression_of_concern", notice_doi="10.5555/eoc", date="2023-01")],
    ),
    CorpusPaper(
        id="corrected",
        title="Corrected once",
        doi="10.5555/corrected",
        openalex_id="W5",
        updates=[CorpusUpdate(type="correction", notice_doi="10.5555/corr", date="2022-06-01")],
    ),
]


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer(Corpus(papers=PAPERS)) as replay:
        yield replay


def checker(server: ReplayServer, tmp_path: Path, **overrides: Any) -> RetractionChecker:
    values: dict[str, Any] = {
        **server.settings_overrides(),
        "state_dir": tmp_path,
        "crossref_requests_per_second": 500.0,
        "openalex_requests_per_second": 500.0,
        "scholarly_timeout_seconds": 2.0,
        "scholarly_max_attempts": 2,
        "scholarly_retry_initial_wait": 0.01,
        "scholarly_retry_max_wait": 0.1,
        "scholarly_retry_timeout": 2.0,
        "contact_email": "tests@example.org",
    }
    values.update(overrides)
    return build_retraction_checker(load_settings(**values).scholarly)


def test_states_are_told_apart(server: ReplayServer, tmp_path: Path) -> None:
    with checker(server, tmp_path) as check:
        status = check.check(
            [
                "https://doi.org/10.5555/PLAIN",
                "10.5555/rw",
                "doi:10.5555/concern",
                "10.5555/corrected",
                "10.5555/unknown",
            ]
        )
    assert status["10.5555/plain"].state == "none"
    assert status["10.5555/plain"].openalex_retracted is False
    rw = status["10.5555/rw"]
    assert rw.state == "retracted" and rw.openalex_retracted is None  # OpenAlex does not know it; Crossref does
    assert rw.retraction is not None and rw.retraction.source == "retraction-watch"
    assert rw.retraction.notice_doi == "10.5555/rw.notice" and rw.retraction.date == "2024-03-05"
    assert status["10.5555/concern"].state == "has_concern"
    assert status["10.5555/concern"].notices[0].date == "2023-01"
    assert status["10.5555/corrected"].state == "corrected"
    assert status["10.5555/unknown"].state == "none"  # both answered: no record, no notice
    assert set(status["10.5555/plain"].checked) == {"crossref", "openalex"}


def test_a_retraction_between_two_lookups_is_seen_and_never_cached(server: ReplayServer, tmp_path: Path) -> None:
    with checker(server, tmp_path) as check:
        assert check.check(["10.5555/later"])["10.5555/later"].state == "none"
        server.set_updates("later", [CorpusUpdate(type="retraction", notice_doi="10.5555/later.r", date="2026-11-01")])
        after = check.check(["10.5555/later"])["10.5555/later"]
    assert after.state == "retracted" and after.openalex_retracted is True
    assert len(server.requests("crossref")) == 2 and len(server.requests("openalex")) == 2


def test_one_source_down_leaves_the_other(server: ReplayServer, tmp_path: Path) -> None:
    server.inject(api="crossref", status=503)
    with checker(server, tmp_path) as check:
        status = check.check(["10.5555/concern", "10.5555/rw"])
    # OpenAlex answered: no retraction flag for the concern paper, and nothing about rw (it does not know it)
    assert status["10.5555/concern"].checked == ("openalex",) and status["10.5555/concern"].state == "none"
    assert status["10.5555/concern"].errors and "crossref" in status["10.5555/concern"].errors[0]
    server.clear_faults()
    server.inject(api="openalex", status=503)
    server.inject(api="crossref", status=503)
    with checker(server, tmp_path) as check:
        down = check.check(["10.5555/rw"])["10.5555/rw"]
    assert down.state == "unknown" and down.checked == () and len(down.errors) == 2


def test_polite_pool_and_bad_dois(server: ReplayServer, tmp_path: Path) -> None:
    with checker(server, tmp_path) as check:
        check.check(["10.5555/plain"])
        with pytest.raises(ValueError, match="not a DOI"):
            check.check(["not a doi"])
    (request,) = server.requests("crossref")
    assert request.query.get("mailto") == "tests@example.org"
    assert "mailto:tests@example.org" in request.headers["user-agent"]


def test_a_retraction_can_be_set_over_http(server: ReplayServer, tmp_path: Path) -> None:
    import httpx

    answer = httpx.post(
        f"{server.base_url}/_replay/papers/plain/updates", json=[{"type": "withdrawal", "date": "2026-01-02"}]
    )
    assert answer.status_code == 200
    assert httpx.post(f"{server.base_url}/_replay/papers/nope/updates", json=[]).status_code == 404
    with checker(server, tmp_path) as check:
        assert check.check(["10.5555/plain"])["10.5555/plain"].state == "retracted"
