"""Shared by the retraction and refresh tests: three papers on the scholarly replay server, the whole application
pointed at it, and the task's paper pages."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lyra.bootstrap import Services, build_services
from lyra.testing.scholarly import Corpus, CorpusPaper, CorpusUpdate, ReplayServer
from tests.support.helpers import replay_settings

PAPERS = [
    CorpusPaper(id="keep", title="A sound trial", doi="10.5555/keep", openalex_id="W11"),
    CorpusPaper(id="gone", title="A trial retracted later", doi="10.5555/gone", openalex_id="W12"),
    CorpusPaper(id="worry", title="A trial under concern later", doi="10.5555/worry", openalex_id="W13"),
]
RETRACTION = CorpusUpdate(type="retraction", notice_doi="10.5555/gone.retraction", date="2026-10-01")
CONCERN = CorpusUpdate(type="expression_of_concern", notice_doi="10.5555/worry.eoc", date="2026-09-01")


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer(Corpus(papers=PAPERS)) as replay:
        yield replay


@pytest.fixture
def lyra(graph: Services, server: ReplayServer) -> Iterator[Services]:
    """The whole application with its scholarly sources pointed at the replay server."""
    settings = replay_settings(graph, server.settings_overrides(), write_batch_size=500, cleanup_batch_size=200)
    services = build_services(settings, apply_schema=False)
    try:
        yield services
    finally:
        services.close()


def paper_pages(services: Services, task_id: str, dois: list[str]) -> dict[str, str]:
    ids = services.evidence.upsert_pages(
        [{"url": f"https://papers.invalid/{d}", "doi": d, "title": f"paper {d}", "year": 2024,
          "domain_category": "academic"} for d in dois]
    ).ids  # fmt: skip
    services.evidence.record_task_reads(task_id, ids, "retraction test")
    return dict(zip(dois, ids, strict=True))
