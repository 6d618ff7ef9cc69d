"""A paper read again after its abstract changed compares versions like a web page (decision record 0016), on the
real Neo4j, the real offline models, the real worker pool and the scholarly replay server: a doi job reads the
paper (two passages, both judged against the claim); the replay server drops the second passage's sentences from the
abstract and moves OpenAlex's updated_date; refresh_task finds the paper changed and its re-read job (the academic
job path, through the response cache the re-check refreshed) supersedes the passage that left: its edge counts for
nothing (out of the claim's stored sums, flagged in materials, a passage_superseded event in the timeline). A later
version putting the sentences back restores the same edge."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lyra.bootstrap import Services, build_services
from lyra.models.api import GetStatusRequest, QueueTargetsRequest, Target, TargetOptions
from lyra.models.refresh import RefreshRequest
from lyra.services.jobs import WorkerPool
from lyra.services.research import ResearchExecutor
from lyra.testing.scholarly import Corpus, CorpusPaper, ReplayServer
from tests.support.helpers import replay_settings
from tests.support.passages import (
    CLAIM,
    COUNT_KEY,
    DROPPED,
    KEPT,
    assert_sums_exact,
    edges_of,
    evidence_item,
    superseded_links,
    timeline_edges,
)

pytestmark = pytest.mark.neo4j
TASK = "paper_passages"
DOI = "10.5555/lyra.trf.passages"
PAPER = CorpusPaper(
    id="trial",
    title="Time-restricted eating and insulin sensitivity",
    abstract=f"{KEPT} {DROPPED}",
    year=2024,
    venue="Journal of Replayed Trials",
    doi=DOI,
    s2_id=f"{7:040x}",
    openalex_id="W27",
)


@dataclass
class World:
    services: Services
    server: ReplayServer

    def settle(self) -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            status = self.services.operations.get_status(GetStatusRequest(task_id=TASK, wait=1))
            if status.jobs.queued + status.jobs.running == 0:
                return
        raise AssertionError("the jobs did not settle")

    def page_id(self) -> str:
        records, _, _ = self.services.store.driver.execute_query(
            "MATCH (p:Page {doi: $doi}) RETURN p.id AS id", {"doi": DOI}, database_=self.services.store.database
        )
        return str(records[0]["id"])

    def last_result(self) -> dict[str, Any]:
        status = self.services.operations.get_status(GetStatusRequest(task_id=TASK, detail="full"))
        assert status.job_list
        job = status.job_list[-1]
        assert job.state == "done", job.error
        assert job.result is not None
        return job.result


@pytest.fixture
def world(graph: Services, tmp_path: Path) -> Iterator[World]:
    with ReplayServer(Corpus(papers=[PAPER])) as server:
        # the services' own refresh and academic flow over the replay server; the response cache lives in
        # tmp_path: the first read fills it, the re-check refreshes it
        settings = replay_settings(graph, server.settings_overrides(), state_dir=tmp_path, s2_requests_per_second=500.0)
        services = build_services(settings, apply_schema=False)
        executor = ResearchExecutor(
            services.store,
            lambda: services.ingest,
            settings.paths.allowed_roots,
            academic=services.academic,
            max_api_requests=1000,
        )
        pool = WorkerPool(services.store, executor, poll_seconds=0.1, heartbeat_seconds=0.5)
        services.jobs.on_queued(pool.wake)
        pool.start()
        try:
            yield World(services, server)
        finally:
            pool.stop()
            services.close()


def refresh_and_read(world: World, abstract: str, version: str) -> None:
    """The replay server's paper changes; a refresh finds it changed and its re-read job runs."""
    world.server.set_record("trial", abstract=abstract, updated_date=version)
    result = world.services.operations.refresh_task(RefreshRequest(task_id=TASK, max_targets=0))
    assert result.papers is not None
    assert (result.papers.changed, result.papers.requeued) == (1, 1), result.papers
    world.settle()


def test_a_passage_that_left_a_changed_abstract_stops_counting_and_counts_again_when_it_is_back(world: World) -> None:
    services = world.services
    services.tasks.create_task(TASK, CLAIM)
    options = TargetOptions(expand_citations=False)
    services.operations.queue_targets(
        QueueTargetsRequest(task_id=TASK, targets=[Target(kind="doi", value=f"https://doi.org/{DOI}", options=options)])
    )
    world.settle()
    page_id = world.page_id()
    first = edges_of(services, page_id, TASK)
    assert set(first) == {"kept", "dropped"}, first  # both passages of the abstract were judged against the claim
    assert not first["kept"]["superseded"] and not first["dropped"]["superseded"]
    claim_id, dropped_id = first["dropped"]["claim_id"], first["dropped"]["id"]
    counts_key = COUNT_KEY[first["dropped"]["rel"]]
    before = assert_sums_exact(services, claim_id, TASK)

    # the abstract loses the second passage's sentences: after the refresh's re-read that edge counts for nothing
    refresh_and_read(world, KEPT, "2026-11-20T08:00:00.000000")
    assert world.page_id() == page_id  # the same page (DOI-unique), read again
    second = edges_of(services, page_id, TASK)
    assert second["dropped"]["id"] == dropped_id and second["dropped"]["superseded"]
    assert not second["kept"]["superseded"]
    assert superseded_links(services, page_id) == [(False, False), (True, True)]
    after = assert_sums_exact(services, claim_id, TASK)
    assert after[counts_key] == before[counts_key] - 1
    if first["dropped"]["rel"] != "NEUTRAL":
        weight_key = "sw" if first["dropped"]["rel"] == "SUPPORTS" else "rw"
        assert after[weight_key] == pytest.approx(before[weight_key] - first["dropped"]["weight"], abs=1e-9)
    assert world.last_result()["passages"] == {
        "superseded": 1,
        "restored": 0,
        "edges_superseded": 1,
        "edges_restored": 0,
    }
    item = evidence_item(services, TASK, claim_id, dropped_id)
    assert item.superseded and not item.retracted and item.weight == 0.0
    assert timeline_edges(services, TASK, claim_id, "passage_superseded") == [dropped_id]

    # a later version puts the sentences back: the same fragment, the same edge, counting again
    refresh_and_read(world, f"{KEPT} {DROPPED}", "2026-11-22T08:00:00.000000")
    third = edges_of(services, page_id, TASK)
    assert third["dropped"]["id"] == dropped_id and not third["dropped"]["superseded"]
    assert third["dropped"]["restored_at"]
    restored = assert_sums_exact(services, claim_id, TASK)
    assert restored[counts_key] == before[counts_key]
    assert restored["sw"] == pytest.approx(before["sw"], abs=1e-9)
    assert restored["rw"] == pytest.approx(before["rw"], abs=1e-9)
    assert world.last_result()["passages"]["edges_restored"] == 1
    assert not evidence_item(services, TASK, claim_id, dropped_id).superseded
    assert timeline_edges(services, TASK, claim_id, "passage_restored") == [dropped_id]
