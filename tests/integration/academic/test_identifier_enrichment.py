"""Identifier enrichment: the DOIs, PMIDs and arXiv ids a read page or JSONL record carries go to
the academic resolver. Real Neo4j, the real offline models, a web page served on 127.0.0.1 through the real
fetcher, and the academic APIs answered by the local replay server (the demo's corpus).

Checked: a web page's own DOI fills its venue; a DOI its text names becomes an abstract page, judged, with a
``CITES {citation_source: extraction}`` edge from the web page; an unknown DOI is listed as not found; file targets
send nothing to the APIs unless asked; the APIs down -> the page stays read and the job done, with a warning."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lyra.bootstrap import Services
from lyra.core.settings import Settings
from lyra.models.api import QueueTargetsRequest, Target, TargetOptions
from lyra.services.jobs import ClaimedJob, JobContext, JobOutcome, JobService
from lyra.services.research import ResearchExecutor
from lyra.sources.web import WebFetcher
from lyra.testing.scholarly import Corpus, ReplayServer
from tests.support.helpers import article_site

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "config" / "examples" / "scholarly" / "corpus.json"
CLAIM = "Time-restricted eating improves insulin sensitivity in adults"
SEED_DOI = "10.5555/lyra.trf.2024.001"  # the corpus's seed trial (venue: Journal of Metabolic Trials)
CITED_DOI = "10.5555/lyra.trf.2019.014"  # the corpus's early meal timing study
UNKNOWN_DOI = "10.5555/lyra.nowhere.1999.1"
ARTICLE = f"""<!doctype html><html><head><title>Eating windows and insulin</title>
<meta name="citation_doi" content="{SEED_DOI}">
<meta name="citation_publication_date" content="2024/03/01">
</head><body><article><h1>Eating windows and insulin</h1>
<p>In a randomized trial of 120 adults with prediabetes, eating within an eight-hour window for twelve weeks
improved insulin sensitivity compared with usual eating, and the effect did not depend on weight loss.</p>
<p>An earlier crossover study (doi:{CITED_DOI}) found lower insulin levels with early eating. A companion report
(https://doi.org/{UNKNOWN_DOI}) is cited by the authors but has not appeared.</p>
</article></body></html>""".encode()


@pytest.fixture
def site() -> Iterator[str]:
    with article_site(lambda _base: ARTICLE) as base:
        yield base


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
            "scholarly_retry_initial_wait": 0.05,
            "scholarly_retry_max_wait": 0.2,
            "scholarly_max_attempts": 2,
            "s2_requests_per_second": 50.0,
            "fetch_allow_hosts": ["127.0.0.1"],
        }
    )


def run(graph: Services, api_settings: Settings, root: Path, target: Target) -> JobOutcome:
    """Run one queued target through a research executor with enrichment on (at most 10 identifiers per job)."""
    queued = JobService(graph.store, graph.task_repo, [root]).queue(
        QueueTargetsRequest(task_id="enrich", targets=[target])
    )
    (item,) = queued.jobs
    job = ClaimedJob(
        item.job_id, "enrich", target.kind, item.value, options=target.options.model_dump(), attempts=1, claim="c"
    )
    with WebFetcher.from_settings(api_settings, gate=graph.domains) as fetcher:
        executor = ResearchExecutor(
            graph.store,
            lambda: graph.ingest,
            [root],
            academic=lambda n: graph.academic(n, settings=api_settings),
            max_api_requests=100,
            web=lambda: fetcher,
            enrichment_max=10,
        )
        return executor(job, JobContext(job))


def rows(graph: Services, cypher: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = graph.store.driver.execute_query(cypher, params, database_=graph.store.database)
    return [r.data() for r in records]


def test_a_web_page_s_dois_become_abstract_pages_cited_by_the_page(
    graph: Services, api_settings: Settings, replay: ReplayServer, site: str, tmp_path: Path
) -> None:
    graph.tasks.create_task("enrich", CLAIM)
    outcome = run(graph, api_settings, tmp_path, Target(kind="url", value=f"{site}/article"))

    academic = outcome.result["academic"]
    assert academic["identifiers"] == [f"doi:{SEED_DOI}", f"doi:{CITED_DOI}", f"doi:{UNKNOWN_DOI}"]
    assert academic["not_found"] == [f"doi:{UNKNOWN_DOI}"]
    assert academic["citations"] == 1
    assert sum(counters["requests"] for counters in academic["api"].values()) > 0
    assert outcome.pages == 1 + outcome.result["enrichment"]["documents"]

    # the page's own DOI filled what its HTML lacked (the venue) and kept what it had (its year, its address)
    (page,) = rows(
        graph, "MATCH (p:Page {doi: $doi}) RETURN p.url AS url, p.year AS year, p.venue AS venue", doi=SEED_DOI
    )
    assert page == {"url": f"{site}/article", "year": 2024, "venue": "Journal of Metabolic Trials"}

    # the named DOI: an abstract page with its year, judged against the claim, cited by the web page
    cited = rows(
        graph,
        "MATCH (w:Page {url: $url})-[c:CITES]->(p:Page {doi: $doi}) "
        "RETURN c.citation_source AS source, p.page_type AS type, p.year AS year",
        url=f"{site}/article",
        doi=CITED_DOI,
    )
    assert cited == [{"source": "extraction", "type": "academic_abstract", "year": 2019}]
    judged = rows(
        graph,
        "MATCH (:Page {doi: $doi})<-[:EXTRACTED_FROM]-(:Fragment)-[e:SUPPORTS|REFUTES|NEUTRAL]->(:Claim) "
        "RETURN count(e) AS n",
        doi=CITED_DOI,
    )
    assert judged[0]["n"] > 0
    assert not rows(graph, "MATCH (p:Page {doi: $doi}) RETURN p", doi=UNKNOWN_DOI)


def test_file_targets_ask_the_apis_only_when_told_to(
    graph: Services, api_settings: Settings, replay: ReplayServer, tmp_path: Path
) -> None:
    graph.tasks.create_task("enrich", CLAIM)
    record = {
        "title": "Notes on meal timing",
        "abstract": f"A narrative summary of meal-timing trials in adults, citing doi:{CITED_DOI} among others, "
        "that reports lower fasting insulin when meals are eaten early in the day.",
        "year": 2022,
    }
    (tmp_path / "notes.jsonl").write_text(json.dumps(record) + "\n")

    outcome = run(graph, api_settings, tmp_path, Target(kind="file", value=str(tmp_path / "notes.jsonl")))
    assert outcome.result["identifiers"] == [f"doi:{CITED_DOI}"]
    assert "academic" not in outcome.result
    assert replay.requests(api="semantic_scholar") == [] and replay.requests(api="openalex") == []

    asked = Target(kind="file", value=str(tmp_path / "notes.jsonl"), options=TargetOptions(enrich_identifiers=True))
    outcome = run(graph, api_settings, tmp_path, asked)
    assert outcome.result["academic"]["identifiers"] == [f"doi:{CITED_DOI}"]
    assert rows(
        graph,
        "MATCH (:Page {page_type: 'academic'})-[c:CITES {citation_source: 'extraction'}]->(p:Page {doi: $doi}) "
        "RETURN p.page_type AS type",
        doi=CITED_DOI,
    ) == [{"type": "academic_abstract"}]


def test_the_apis_down_leave_the_page_read_and_the_job_done_with_a_warning(
    graph: Services, api_settings: Settings, replay: ReplayServer, site: str, tmp_path: Path
) -> None:
    graph.tasks.create_task("enrich", CLAIM)
    replay.inject(status=503)
    outcome = run(graph, api_settings, tmp_path, Target(kind="url", value=f"{site}/article"))
    academic = outcome.result["academic"]
    assert any("identifier enrichment stopped after 0 of 3" in w for w in academic["warnings"]), academic["warnings"]
    assert outcome.pages == 1 and outcome.result["fragments_new"] > 0
    assert "enrichment" not in outcome.result
