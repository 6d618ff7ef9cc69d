"""Web citation detection inside a `url` job: the links of a page served on 127.0.0.1 are settled
by rules (the page itself, sharing, a blocked domain, a paper address) or by the real local LLM (YES / NO), and the
cited ones become pages with `CITES {citation_source: extraction}` that show as the task's reference candidates.
Real Neo4j, the real offline models, the real fetcher."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lyra.bootstrap import Services
from lyra.models.api import QueryViewRequest, QueueTargetsRequest, Target
from lyra.services.jobs import ClaimedJob, JobContext, JobService
from lyra.services.research import ResearchExecutor
from lyra.sources.web import WebFetcher
from tests.support.helpers import article_site

pytestmark = pytest.mark.neo4j
CLAIM = "Regular physical activity lowers blood pressure in adults with hypertension"
REPORT = "https://health.example.org/reports/exercise-and-blood-pressure-2021"
NEWSLETTER = "https://news.example.net/newsletter/subscribe"


def article(base: str) -> bytes:
    return f"""<!doctype html><html><head><title>Walking and blood pressure</title></head><body>
<article><h1>Walking and blood pressure</h1>
<p>Adults with hypertension who walked briskly for thirty minutes on most days lowered their systolic blood pressure
by about five points within twelve weeks, according to the <a href="{REPORT}">national exercise and blood pressure
report of 2021</a>, which pooled forty randomised trials of aerobic exercise in adults with high blood pressure.</p>
<p>An earlier trial of supervised training found similar effects (<a href="https://doi.org/10.5555/lyra.bp.2015.3">doi:10.5555/lyra.bp.2015.3</a>).
Resistance training had smaller effects on blood pressure in the same pooled analysis of randomised trials.</p>
<p>Want more health news like this? <a href="{NEWSLETTER}">Subscribe to our weekly newsletter</a> for free.
<a href="https://twitter.com/intent/tweet?url={base}/article">Share on Twitter</a>.
<a href="https://blocked.example.com/ads/walking-shoes">Buy walking shoes</a>.
<a href="{base}/article#top">Back to top</a></p>
</article></body></html>""".encode()


@pytest.fixture
def site() -> Iterator[str]:
    with article_site(article) as base:
        yield base


def rows(graph: Services, cypher: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = graph.store.driver.execute_query(cypher, params, database_=graph.store.database)
    return [r.data() for r in records]


def test_a_page_s_cited_links_become_cites_edges_and_reference_candidates(graph: Services, site: str) -> None:
    graph.tasks.create_task("webcite", CLAIM)
    graph.domains.block("blocked.example.com", "dangerous_pattern", "a test block", None)
    url = f"{site}/article"
    queued = JobService(graph.store, graph.task_repo, []).queue(
        QueueTargetsRequest(task_id="webcite", targets=[Target(kind="url", value=url)])
    )
    job = ClaimedJob(queued.jobs[0].job_id, "webcite", "url", url, options={}, attempts=1, claim="c")
    allowed = graph.settings.model_copy(update={"fetch_allow_hosts": ["127.0.0.1"]})
    with WebFetcher.from_settings(allowed, gate=graph.domains) as fetcher:
        executor = ResearchExecutor(
            graph.store,
            lambda: graph.ingest,
            [],
            web=lambda: fetcher,
            citations=lambda: graph.citation_detector,
        )
        outcome = executor(job, JobContext(job))

    found = outcome.result["citations"]
    assert found["dropped"] == {"the page itself": 1, "sharing link": 1, "blocked domain": 1}
    assert found["by_rule"] == 1  # the doi.org link
    assert found["llm_calls"] == 2  # the report and the newsletter
    assert REPORT in found["cited_urls"] and NEWSLETTER not in found["cited_urls"]
    assert "https://doi.org/10.5555/lyra.bp.2015.3" in found["cited_urls"]

    cites = rows(
        graph,
        "MATCH (:Page {url: $url})-[c:CITES]->(p:Page) RETURN p.url AS url, p.doi AS doi, c.citation_source AS source",
        url=url,
    )
    assert {r["source"] for r in cites} == {"extraction"}
    assert {r["url"] for r in cites} == set(found["cited_urls"])
    assert {r["doi"] for r in cites if r["url"].startswith("https://doi.org/")} == {"10.5555/lyra.bp.2015.3"}
    assert not rows(graph, "MATCH (p:Page) WHERE p.domain = 'blocked.example.com' RETURN p")

    view = graph.operations.query_view(QueryViewRequest(name="reference_candidates", params={"task_id": "webcite"}))
    assert {r["url"] for r in view.rows} == set(found["cited_urls"])
