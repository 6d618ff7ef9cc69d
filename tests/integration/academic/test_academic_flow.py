"""The academic flow end to end: doi and query jobs against a real HTTP server on 127.0.0.1 that answers in
Semantic Scholar's and OpenAlex's shapes (lyra.testing.scholarly, serving the demo's corpus), the real
Neo4j, the real offline embedder, stance judge and local LLM (the judge's second opinion; Stage 2 of citation
expansion asks none by default since evidence coverage by relevance).

Checked: abstract pages, fragments and stance edges for the seed and the selected papers; a page for every paper
seen and a CITES edge for every citation pair seen (with the API it came from); the Stage 0-2 counts, no LLM call
in Stage 2 and the off-topic paper never selected; reference candidates queued and read without further
expansion; materials with years and venues; a re-run served from the response cache; one API down -> the other's
results and a warning; both down -> the job fails naming both; the per-task request budget; a paper read keeps its
abstract's hash and OpenAlex's updated_date (what a refresh re-checks).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lyra.bootstrap import Services
from lyra.core.settings import Settings
from lyra.models.api import (
    GetMaterialsRequest,
    GetStatusRequest,
    QueueReferenceCandidatesRequest,
    QueueTargetsRequest,
    Target,
    TargetOptions,
    TaskStatus,
)
from lyra.services.research import ResearchExecutor
from lyra.testing.scholarly import Corpus, ReplayServer

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "config" / "examples" / "scholarly" / "corpus.json"
SEED_DOI = "10.5555/lyra.trf.2024.001"
CLAIM = "Time-restricted eating improves insulin sensitivity in adults"


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    with ReplayServer(Corpus.load(CORPUS)) as server:
        yield server


@pytest.fixture
def api_settings(settings: Settings, replay: ReplayServer, tmp_path: Path) -> Settings:
    return settings.model_copy(
        update={
            **replay.settings_overrides(),
            "scholarly_cache_path": tmp_path / "scholarly.sqlite",
            "citation_stage1_top_k": 4,  # Stage 2 rates these 4 (the ranker rater: no LLM call)
            "citation_stage2_top_k": 3,
            "scholarly_retry_initial_wait": 0.05,
            "scholarly_retry_max_wait": 0.5,
            "scholarly_max_attempts": 2,
            "s2_requests_per_second": 50.0,
        }
    )


def run_job(graph: Services, api_settings: Settings, task_id: str, target: Target, budget: int = 600) -> TaskStatus:
    """Queue one target and run it in this process's workers until it has finished."""
    executor = ResearchExecutor(
        graph.store,
        lambda: graph.ingest,
        graph.settings.paths.allowed_roots,
        academic=lambda n: graph.academic(n, settings=api_settings),
        max_api_requests=budget,
    )
    from lyra.services.jobs import WorkerPool

    pool = WorkerPool(graph.store, executor, poll_seconds=0.1, heartbeat_seconds=0.5)
    graph.operations.queue_targets(QueueTargetsRequest(task_id=task_id, targets=[target]))
    pool.start()
    try:
        return wait_drained(graph, task_id)
    finally:
        pool.stop()


def wait_drained(graph: Services, task_id: str, timeout: float = 600.0) -> TaskStatus:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = graph.operations.get_status(GetStatusRequest(task_id=task_id, wait=2, detail="full"))
        if status.jobs.queued + status.jobs.running == 0:
            return status
    raise AssertionError("the jobs did not finish in time")


def last_result(status: TaskStatus) -> dict[str, Any]:
    assert status.job_list
    job = status.job_list[-1]
    assert job.state == "done", job.error
    assert job.result is not None
    return job.result


def rows(graph: Services, cypher: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = graph.store.driver.execute_query(cypher, params, database_=graph.store.database)
    return [r.data() for r in records]


def new_task(graph: Services, task_id: str) -> None:
    graph.tasks.create_task(task_id, CLAIM)


def test_a_doi_job_reads_the_paper_expands_its_citations_and_writes_cites(
    graph: Services, api_settings: Settings, replay: ReplayServer
) -> None:
    new_task(graph, "acad_doi")
    status = run_job(graph, api_settings, "acad_doi", Target(kind="doi", value=f"https://doi.org/{SEED_DOI}"))
    result = last_result(status)
    academic = result["academic"]
    assert academic["seeds"] == [f"doi:{SEED_DOI}"]
    # 8 references + 3 citing papers (one known to OpenAlex only); Stage 0 drops the letter without abstract
    assert academic["stages"] == {
        "candidates": 11,
        "after_stage0": 10,
        "after_stage1": 4,
        "final": 3,
        "llm_calls": 0,
    }
    assert len(academic["selected"]) == 3
    assert all(item["title"]["untrusted"] for item in academic["selected"])
    assert not any("bicycle" in item["title"]["text"].lower() for item in academic["selected"])
    assert len({item["usefulness"] for item in academic["selected"]}) == 3  # rated, and not all alike
    assert academic["papers_seen"] == 12 and academic["citations"] == 11
    assert result["documents"] == 4  # the seed and the 3 selected
    assert academic["api"]["semantic_scholar"]["requests"] >= 2
    assert academic["api"]["openalex"]["requests"] >= 2

    pages = rows(
        graph,
        "MATCH (p:Page) RETURN p.doi AS doi, p.page_type AS type, p.year AS year, p.venue AS venue, "
        "COUNT { (p)<-[:EXTRACTED_FROM]-(:Fragment) } AS fragments, p.paper_hash IS NOT NULL AS hashed, "
        "p.paper_version AS version",
    )
    assert len(pages) == 12 and {p["type"] for p in pages} == {"academic_abstract"}
    # a paper read keeps what its metadata said (a refresh re-checks it); a paper only seen keeps nothing
    assert all(p["hashed"] == bool(p["fragments"]) for p in pages)
    assert any(p["version"] for p in pages if p["fragments"])
    assert all(p["year"] and p["venue"] for p in pages)
    assert sum(1 for p in pages if p["fragments"]) == 4
    cites = rows(
        graph,
        "MATCH (a:Page)-[c:CITES]->(b:Page) RETURN a.doi AS citing, b.doi AS cited, b.title AS cited_title, "
        "a.title AS citing_title, c.citation_source AS source",
    )
    assert len(cites) == 11
    assert sum(1 for c in cites if c["citing"] == SEED_DOI) == 8
    review = [c for c in cites if c["citing_title"].startswith("Meal timing, circadian biology")]
    assert len(review) == 1 and review[0]["source"] == "openalex"  # Semantic Scholar does not know that paper
    assert {c["source"] for c in cites if c["citing"] == SEED_DOI} == {"semantic_scholar"}  # preferred on ties

    materials = graph.operations.get_materials(GetMaterialsRequest(task_id="acad_doi"))
    (claim,) = materials.claims
    judged = rows(
        graph,
        "MATCH (:Claim)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment)-[:EXTRACTED_FROM]->(p:Page) "
        "RETURN count(DISTINCT p) AS pages",
    )
    assert judged == [{"pages": 4}]  # every page read was judged against the claim
    assert claim.evidence
    assert all(e.year is not None and e.venue for e in claim.evidence)
    assert status.academic is not None and status.academic.stages["llm_calls"] == 0
    assert status.academic.api["openalex"]["requests"] == academic["api"]["openalex"]["requests"]

    # the cited but unread papers are reference candidates; queueing them reads them without further expansion
    view = graph.operations.explore.query_view("reference_candidates", {"task_id": "acad_doi"})
    unread = {r["doi"] for r in view.rows}
    assert unread and SEED_DOI not in unread
    assert "10.5555/lyra.letter.2020.005" in unread  # cited, so listed, even without an abstract to read
    queued = graph.operations.queue_reference_candidates(QueueReferenceCandidatesRequest(task_id="acad_doi", limit=2))
    assert queued.candidates == len(unread) and queued.queued == 2
    assert all(s.target.kind == "doi" and not s.target.options.expand_citations for s in queued.selected)
    cites_before = len(cites)
    status = run_job(graph, api_settings, "acad_doi", queued.selected[0].target)  # runs both queued jobs
    done = [j for j in status.job_list or [] if j.value in {s.target.value for s in queued.selected}]
    assert [j.state for j in done] == ["done", "done"]
    assert all(j.result and j.result["academic"]["stages"]["llm_calls"] == 0 for j in done)
    assert len(rows(graph, "MATCH ()-[c:CITES]->() RETURN c")) == cites_before
    view = graph.operations.explore.query_view("reference_candidates", {"task_id": "acad_doi"})
    assert {r["doi"] for r in view.rows} == unread - {s.target.value for s in queued.selected}


def test_a_doi_job_counts_the_pages_it_discovered_as_new_and_a_later_read_of_them_as_existing(
    graph: Services, api_settings: Settings, replay: ReplayServer
) -> None:
    # the job wrote the paper's page first (every paper seen gets one), so its ingest found the page
    # "existing" and the job reported pages_new 0 for a page it had just discovered
    target = Target(kind="doi", value=SEED_DOI, options=TargetOptions(expand_citations=False))
    new_task(graph, "acad_new")
    first = last_result(run_job(graph, api_settings, "acad_new", target))
    assert first["documents"] == 1
    assert (first["pages_new"], first["pages_existing"]) == (1, 0)
    assert first["academic"]["pages_new"] == 1 and first["academic"]["papers_seen"] == 1
    graph.tasks.create_task("acad_again", "Time-restricted eating lowers fasting glucose in adults")
    again = last_result(run_job(graph, api_settings, "acad_again", target))
    assert (again["documents"], again["pages_new"], again["pages_existing"]) == (1, 0, 1)
    assert again["academic"]["pages_new"] == 0


def test_a_rerun_is_served_from_the_cache_and_a_query_job_searches_both_apis(
    graph: Services, api_settings: Settings, replay: ReplayServer
) -> None:
    new_task(graph, "acad_q1")
    first = last_result(
        run_job(graph, api_settings, "acad_q1", Target(kind="query", value="time-restricted eating insulin"))
    )
    assert first["academic"]["seeds"] and f"doi:{SEED_DOI}" in first["academic"]["seeds"]
    searched = {r.api for r in replay.requests() if r.path == "/paper/search" or "search" in r.query}
    assert searched == {"semantic_scholar", "openalex"}
    sent = len(replay.requests())

    new_task(graph, "acad_q2")  # the same query for another task: every answer comes from the disk cache
    again = last_result(
        run_job(graph, api_settings, "acad_q2", Target(kind="query", value="time-restricted eating insulin"))
    )
    assert len(replay.requests()) == sent
    api = again["academic"]["api"]
    assert sum(c["requests"] for c in api.values()) == 0
    assert sum(c["cache_hits"] for c in api.values()) > 0
    assert again["academic"]["seeds"] == first["academic"]["seeds"]


def test_one_api_down_gives_the_other_with_a_warning_and_both_down_fail_the_job(
    graph: Services, api_settings: Settings, replay: ReplayServer
) -> None:
    replay.inject(api="semantic_scholar", status=503)
    new_task(graph, "acad_s2_down")
    result = last_result(run_job(graph, api_settings, "acad_s2_down", Target(kind="doi", value=SEED_DOI)))
    warnings = " ".join(result["academic"]["warnings"])
    assert "semantic_scholar" in warnings
    assert result["documents"] >= 1 and result["academic"]["citations"] >= 1
    sources = {r["source"] for r in rows(graph, "MATCH ()-[c:CITES]->() RETURN c.citation_source AS source")}
    assert sources == {"openalex"}

    replay.inject(api="openalex", status=500)
    new_task(graph, "acad_all_down")
    logged_before = len(replay.requests())
    status = run_job(graph, api_settings, "acad_all_down", Target(kind="doi", value="10.5555/lyra.trf.2022.040"))
    assert status.jobs.failed == 1
    (error,) = status.errors
    assert "source_not_available" in error and "semantic_scholar" in error and "openalex" in error
    # the failed job's requests (each API tried twice: LYRA_SCHOLARLY_MAX_ATTEMPTS=2) still count for the budget
    assert status.academic is not None
    assert {name: c["errors"] for name, c in status.academic.api.items()} == {"semantic_scholar": 1, "openalex": 1}
    assert sum(c["requests"] for c in status.academic.api.values()) == len(replay.requests()) - logged_before


def test_the_task_request_budget_stops_new_academic_jobs(
    graph: Services, api_settings: Settings, replay: ReplayServer
) -> None:
    new_task(graph, "acad_budget")
    status = run_job(
        graph,
        api_settings,
        "acad_budget",
        Target(kind="doi", value=SEED_DOI, options={"expand_citations": False}),
        budget=3,
    )
    first = last_result(status)
    used = sum(c["requests"] for c in first["academic"]["api"].values())
    assert 1 <= used <= 3
    status = run_job(graph, api_settings, "acad_budget", Target(kind="query", value="insulin trial"), budget=used)
    assert status.jobs.failed == 1 and "budget_exhausted" in status.errors[0]
