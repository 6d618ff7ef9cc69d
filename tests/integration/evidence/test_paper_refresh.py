"""A refresh re-checks a task's known paper pages by their metadata, against the real Neo4j and the scholarly replay
server: a paper read through the clients keeps its abstract's hash and OpenAlex's updated_date on its page; after the
replay server revises one paper's abstract and moves only another one's version, a refresh (the response cache
bypassed: the read filled it) finds the first changed (changed_at, a re-read job of the refresh), the second a new
version with nothing re-read, the rest unchanged, a page read before versions were kept a first check; a revision
after that is found again; max_rechecks bounds the check; with every API down each check fails with its reason and
nothing is written or queued."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lyra.bootstrap import Services, build_services
from lyra.models.refresh import RefreshRequest
from lyra.services.academic import paper_page
from lyra.services.paper_freshness import abstract_hash, remember_paper_versions
from lyra.sources.scholarly import PaperId
from lyra.sources.scholarly.provider import build_sources
from lyra.testing.scholarly import Corpus, CorpusPaper, Fault, ReplayServer
from tests.support.helpers import replay_settings, seed_task

pytestmark = pytest.mark.neo4j
TASK = "paper_refresh"

PAPERS = [
    CorpusPaper(
        id=key,
        title=f"A trial of {key}",
        abstract=f"We measured {key} in 120 adults. Blood pressure fell by 5 mmHg.",
        year=2024,
        doi=f"10.5555/{key}",
        s2_id=f"{n:040x}",
        openalex_id=f"W2{n}",
    )
    for n, key in enumerate(["stable", "revised", "moved", "legacy"], start=1)
]


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer(Corpus(papers=PAPERS)) as replay:
        yield replay


@pytest.fixture
def lyra(graph: Services, server: ReplayServer, tmp_path: Path) -> Iterator[Services]:
    settings = replay_settings(
        graph,
        server.settings_overrides(),
        state_dir=tmp_path,  # the response cache lives here: the read fills it
        s2_requests_per_second=500.0,
    )
    services = build_services(settings, apply_schema=False)
    try:
        yield services
    finally:
        services.close()


def read_papers(services: Services) -> dict[str, str]:
    """The papers as the academic path reads them: resolved through the clients (with the response cache), their
    pages written and read by the task, what their metadata said kept (all but 'legacy', read before that)."""
    s = services.settings
    with build_sources(s.scholarly, s.scholarly_cache_file) as sources:
        papers = {p.id: sources.resolve(PaperId("doi", str(p.doi))).value for p in PAPERS}
    assert all(paper is not None and paper.updated for paper in papers.values())
    ids = services.evidence.upsert_pages([paper_page(p) for p in papers.values() if p is not None]).ids
    services.evidence.record_task_reads(TASK, ids, "paper refresh test")
    page_ids = {p.url(): pid for p, pid in zip(papers.values(), ids, strict=True) if p is not None}
    kept = {p.url(): p for key, p in papers.items() if p is not None and key != "legacy"}
    assert remember_paper_versions(services.store, page_ids, kept) == 3
    return {key: page_ids[p.url()] for key, p in papers.items() if p is not None}


def page(services: Services, page_id: str) -> dict[str, Any]:
    records = services.store.driver.execute_query(
        "MATCH (p:Page {id: $id}) RETURN p.paper_hash AS hash, p.paper_version AS version, "
        "p.changed_at IS NOT NULL AS changed",
        id=page_id,
    ).records
    return records[0].data()


def jobs(services: Services) -> list[dict[str, Any]]:
    records = services.store.driver.execute_query(
        "MATCH (:Task {id: $t})-[:HAS_JOB]->(j:Job) RETURN j.id AS id, j.kind AS kind, j.value AS value "
        "ORDER BY j.created_at, j.id",
        t=TASK,
    ).records
    return [r.data() for r in records]


def test_refresh_rechecks_paper_pages_by_their_metadata(lyra: Services, server: ReplayServer) -> None:
    services = lyra
    seed_task(services, TASK, ["the treatment lowers blood pressure"])
    ids = read_papers(services)
    kept = page(services, ids["stable"])
    assert kept["version"] == "2026-01-01T00:00:00.000000" and kept["hash"] == abstract_hash(PAPERS[0].abstract)
    assert page(services, ids["legacy"])["hash"] is None

    revised = "We measured revised in 118 adults after a correction. Blood pressure did not fall."
    server.set_record("revised", abstract=revised, updated_date="2026-11-20T08:00:00.000000")
    server.set_record("moved", updated_date="2026-11-21T09:00:00.000000")
    result = services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0))
    papers = result.papers
    assert papers is not None
    by_id = {p.source_id: p for p in papers.papers}
    assert {key: by_id[pid].result for key, pid in ids.items()} == {
        "stable": "unchanged",
        "revised": "changed",
        "moved": "new_version",
        "legacy": "first_check",
    }
    assert (papers.checked, papers.unchanged, papers.new_version, papers.changed, papers.first_check) == (4, 2, 1, 1, 1)
    assert (papers.failed, papers.requeued) == (0, 1)
    assert by_id[ids["moved"]].version == "2026-11-21T09:00:00.000000"
    (run,) = services.store.driver.execute_query(
        "MATCH (r:Run {id: $id}) RETURN r.papers_checked AS checked, r.papers_unchanged AS unchanged, "
        "r.papers_changed AS changed, r.papers_failed AS failed",
        id=result.run_id,
    ).records
    assert run.data() == {"checked": 4, "unchanged": 2, "changed": 1, "failed": 0}
    assert "2026-01-01" in by_id[ids["moved"]].reason

    # the changed paper is queued to be read again through the academic job path; the others are not
    queued = jobs(services)
    assert [(j["kind"], j["value"]) for j in queued] == [("url", "https://doi.org/10.5555/revised")]
    assert by_id[ids["revised"]].job_id == queued[0]["id"]
    assert page(services, ids["revised"]) == {
        "hash": abstract_hash(revised),
        "version": "2026-11-20T08:00:00.000000",
        "changed": True,
    }
    assert not page(services, ids["moved"])["changed"] and page(services, ids["moved"])["version"].startswith("2026-11")
    assert page(services, ids["legacy"])["hash"] == abstract_hash(PAPERS[3].abstract)

    # another revision is found again (nothing cached); max_rechecks bounds the check, least recently checked first
    server.set_record("stable", abstract="We measured stable again.", updated_date="2026-11-22T00:00:00.000000")
    again = services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0, max_rechecks=4))
    assert again.papers is not None and again.papers.changed == 1 and again.papers.unchanged == 3
    one = services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0, max_rechecks=1))
    assert one.papers is not None and one.papers.checked == 1

    # every API down: each check fails with its reason; nothing written, nothing queued
    before = len(jobs(services))
    server.set_record("revised", abstract="Yet another abstract.", updated_date="2026-11-23T00:00:00.000000")
    server.inject(Fault(status=503))
    down = services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0))
    assert down.papers is not None and down.papers.failed == down.papers.checked == 4
    assert all(p.reason.startswith("no source answered") and p.job_id is None for p in down.papers.papers)
    assert len(jobs(services)) == before
    assert page(services, ids["revised"])["hash"] == abstract_hash(revised)
    server.clear_faults()

    # Semantic Scholar alone down: OpenAlex's abstract differs, but a partial answer is not judged a change
    server.inject(Fault(api="semantic_scholar", status=503))
    partial = services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0))
    assert partial.papers is not None and partial.papers.changed == 0
    failed = [p for p in partial.papers.papers if p.result == "failed"]
    assert [p.source_id for p in failed] == [ids["revised"]] and "not every source answered" in failed[0].reason
    assert partial.papers.unchanged == 3 and len(jobs(services)) == before
    server.clear_faults()
    assert services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0)).papers.changed == 1  # type: ignore[union-attr]
