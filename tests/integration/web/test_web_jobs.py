"""`url` jobs through the web fetcher and the ingest path: a page served on 127.0.0.1 (allowed explicitly) becomes
a page with its year and DOI, fragments and stance edges; a refused address fails the job with the guard's code
and reason. Real Neo4j, real offline models, a real HTTP server."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from lyra.bootstrap import Services
from lyra.models.api import GetStatusRequest, QueueTargetsRequest, Target, TaskStatus
from lyra.services.jobs import WorkerPool
from lyra.services.research import ResearchExecutor
from lyra.sources.web import WebFetcher
from tests.support.helpers import article_site

pytestmark = pytest.mark.neo4j
ARTICLE = b"""<!doctype html><html><head><title>Fasting trial</title>
<meta name="citation_doi" content="10.5555/lyra.web.2023.7">
<meta name="citation_publication_date" content="2023/05/02">
</head><body><article><h1>Time-restricted eating in adults</h1>
<p>In a randomized trial of 80 adults, eating within an eight-hour window for twelve weeks improved insulin
sensitivity compared with usual eating, independently of weight loss. Fasting insulin fell by twelve percent.</p>
<p>The authors cite an earlier crossover study (doi:10.5555/lyra.trf.2019.014) that found similar effects.</p>
</article></body></html>"""


@pytest.fixture
def site() -> Iterator[str]:
    with article_site(lambda _base: ARTICLE) as base:
        yield base


def run(graph: Services, fetcher: WebFetcher, task_id: str, url: str) -> TaskStatus:
    executor = ResearchExecutor(
        graph.store, lambda: graph.ingest, graph.settings.paths.allowed_roots, web=lambda: fetcher
    )
    pool = WorkerPool(graph.store, executor, poll_seconds=0.1, heartbeat_seconds=0.5)
    graph.operations.queue_targets(QueueTargetsRequest(task_id=task_id, targets=[Target(kind="url", value=url)]))
    pool.start()
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            status = graph.operations.get_status(GetStatusRequest(task_id=task_id, wait=2, detail="full"))
            if status.jobs.queued + status.jobs.running == 0:
                return status
        raise AssertionError("the job did not finish")
    finally:
        pool.stop()


def test_a_url_job_reads_the_page_and_a_refused_address_fails_with_its_reason(graph: Services, site: str) -> None:
    graph.tasks.create_task("web_job", "Time-restricted eating improves insulin sensitivity in adults")
    allowed = graph.settings.model_copy(update={"fetch_allow_hosts": ["127.0.0.1"]})
    with WebFetcher.from_settings(allowed, gate=graph.domains) as fetcher:
        status = run(graph, fetcher, "web_job", f"{site}/article")
    (job,) = status.job_list or []
    assert job.state == "done", job.error
    assert job.result is not None
    assert job.result["documents"] == 1 and job.result["fetch"]["code"] == "ok"
    assert "doi:10.5555/lyra.trf.2019.014" in job.result["identifiers"]
    records, _, _ = graph.store.driver.execute_query(
        "MATCH (p:Page)<-[:EXTRACTED_FROM]-(f:Fragment)-[r:SUPPORTS|REFUTES|NEUTRAL]->(:Claim) "
        "RETURN p.year AS year, p.doi AS doi, p.page_type AS type, count(r) AS edges",
        database_=graph.store.database,
    )
    assert [(r["year"], r["doi"], r["type"]) for r in records] == [(2023, "10.5555/lyra.web.2023.7", "web")]
    assert records[0]["edges"] >= 1

    graph.tasks.create_task("web_refused", "Time-restricted eating improves insulin sensitivity in adults")
    with WebFetcher.from_settings(graph.settings, gate=graph.domains) as fetcher:  # no allow-list: loopback is refused
        status = run(graph, fetcher, "web_refused", f"{site}/article")
    assert status.jobs.failed == 1
    assert "ssrf_refused" in status.errors[0] and "nothing was read" in status.errors[0]
