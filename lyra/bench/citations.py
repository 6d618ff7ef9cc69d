"""Benchmark: budgeted citation expansion against the local replay server, stage by stage, and the ingest rate of
abstract pages.

A :class:`~lyra.testing.scholarly.ReplayServer` serves ``synthetic_corpus(sources, candidates, seed)`` on
127.0.0.1 (both APIs' shapes). The real code path runs twice (``Services.academic``: resolve each source paper,
``expand``, ``write_graph``, ``read``) into a throw-away task, with an empty FAISS index, NLI cache and response
cache in a temporary state folder: run 1 sends its requests, run 2 (a fresh ``AcademicResearch`` on the same cache
file) should send none. Then ``pages`` synthetic abstracts (another seed of the same generator) go through
``IngestService.ingest_documents``. At the end the task is cleaned up (hard) and the pages the bench wrote are
removed with their fragments (unless another task's stance edge uses them).
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, SecretStr

from lyra.bench.timing import IngestRate, measure_ingest
from lyra.bootstrap import Services, build_services
from lyra.core.settings import Settings
from lyra.graph.connection import resolve_connection
from lyra.models.ingest import IngestReport
from lyra.services.academic import AcademicRun, CitationFilter
from lyra.sources.local_files import SourceDocument
from lyra.sources.scholarly import PaperId, PaperIndex
from lyra.testing.scholarly import Corpus, ReplayServer, synthetic_corpus

TASK_ID = "bench_citations"
CLAIM = "Sleep, diet, exercise, supplements, screen time and coffee affect health outcomes"
ABSTRACT_URL = "https://bench.example.org/abstract/"
API_REQUESTS_PER_SECOND = 1000.0  # the local server: no need to pace requests as for the real APIs


class CitationRun(BaseModel):
    """One pass over the source papers (seconds are wall time)."""

    resolve_seconds: float  # resolving each source DOI (both APIs)
    gather_seconds: float  # neighbours: references and citations from both APIs, merged
    stage0_seconds: float
    stage1_seconds: float  # embedding + impact
    stage2_seconds: float  # the LLM's usefulness ratings
    write_seconds: float  # pages for every paper seen + CITES edges
    ingest_seconds: float  # the seeds' and selected abstracts: fragments, dedup, judging
    candidates: int
    after_stage0: int
    after_stage1: int
    final: int
    llm_calls: int
    papers_seen: int
    citations: int
    citations_new: int
    pages_read: int
    fragments_new: int
    pairs_judged: int
    pairs_from_cache: int
    requests: int  # sent, as counted by the clients (both APIs)
    cache_hits: int
    server_requests: int  # as logged by the replay server
    api: dict[str, dict[str, int]]

    @property
    def seconds_total(self) -> float:
        return (
            self.resolve_seconds
            + self.gather_seconds
            + self.stage0_seconds
            + self.stage1_seconds
            + self.stage2_seconds
            + self.write_seconds
            + self.ingest_seconds
        )


class CitationBenchResult(BaseModel):
    sources: int
    candidates_per_source: int
    seed: int
    stage1_top_k: int
    stage2_top_k: int
    llm: bool
    stage2_rater: str = "llm-scale"  # the earlier default rater (results recorded before the field existed)
    corpus_candidates: int  # neighbours of the source papers in the corpus
    corpus_candidates_with_abstract: int  # in at least one API's view
    embedder_load_seconds: float
    llm_load_seconds: float  # also when only the stance judge consults the LLM
    judge_load_seconds: float
    runs: list[CitationRun]
    ingest: IngestRate | None

    @property
    def seconds_per_llm_call(self) -> float | None:
        first = self.runs[0]
        return first.stage2_seconds / first.llm_calls if first.llm_calls else None


def corpus_counts(corpus: Corpus) -> tuple[int, int]:
    """The source papers' neighbours in the corpus, and how many of them have an abstract in some API's view."""
    candidates = [p for p in corpus.papers if not p.id.removeprefix("src-").isdigit()]
    with_abstract = sum(
        1
        for p in candidates
        if any(
            view.get("abstract", p.abstract) and known for view, known in ((p.s2, p.s2_id), (p.openalex, p.openalex_id))
        )
    )
    return len(candidates), with_abstract


def abstract_documents(pages: int, seed: int) -> list[SourceDocument]:
    """``pages`` synthetic abstracts as documents for the ingest path (the corpus generator, another seed)."""
    corpus = synthetic_corpus(sources=math.ceil(pages / 80) + 1, candidates_per_source=100, seed=seed)
    documents = [
        SourceDocument(
            url=f"{ABSTRACT_URL}{seed}/{p.id}",
            title=p.title,
            text=p.abstract,
            page_type="academic_abstract",
            origin=f"bench:{p.id}",
            year=p.year,
            venue=p.venue,
            extraction_method="abstract",
        )
        for p in corpus.papers
        if p.abstract
    ]
    return documents[:pages]


def _citation_run(
    services: Services,
    api_settings: Settings,
    replay: ReplayServer,
    source_dois: Sequence[str],
    topics: Sequence[str],
    llm: bool,
    urls: set[str],
) -> CitationRun:
    ingest = services.ingest
    logged_before = len(replay.requests())
    with services.academic(None, settings=api_settings) as academic:
        if not llm:
            academic.filter = CitationFilter(
                api_settings.academic,
                services.models.embedder,
                lambda: None,
                api_settings.paths.prompts_dir,
                ranker=services.ingest.ranker,
            )
        run = AcademicRun()
        start = time.perf_counter()
        seeds = [academic.seeds_for_identifier(PaperId("doi", doi), run)[0] for doi in source_dois]
        resolve_seconds = time.perf_counter() - start

        start = time.perf_counter()
        selected, citations, seen = academic.expand(seeds, topics, run, lambda: None)
        expand_seconds = time.perf_counter() - start
        stages = run.stages
        in_stages = stages.stage0_seconds + stages.stage1_seconds + stages.stage2_seconds

        start = time.perf_counter()
        academic.write_graph([*seeds, *seen], citations, run)
        write_seconds = time.perf_counter() - start
        urls.update(p.url() for p in [*seeds, *seen, *(c.citing for c in citations), *(c.cited for c in citations)])

        to_read = PaperIndex()
        for paper in [*seeds, *(item.paper for item in selected)]:
            to_read.add(paper)

        def read(documents: Sequence[SourceDocument]) -> IngestReport:
            return ingest.ingest_documents(documents, TASK_ID)

        start = time.perf_counter()
        report = academic.read(list(to_read), None, read, run)
        ingest_seconds = time.perf_counter() - start
        usage = academic.sources.usage()
    return CitationRun(
        resolve_seconds=resolve_seconds,
        gather_seconds=max(expand_seconds - in_stages, 0.0),
        stage0_seconds=stages.stage0_seconds,
        stage1_seconds=stages.stage1_seconds,
        stage2_seconds=stages.stage2_seconds,
        write_seconds=write_seconds,
        ingest_seconds=ingest_seconds,
        candidates=stages.candidates,
        after_stage0=stages.after_stage0,
        after_stage1=stages.after_stage1,
        final=stages.final,
        llm_calls=stages.llm_calls,
        papers_seen=run.papers_seen,
        citations=run.citations,
        citations_new=run.citations_new,
        pages_read=run.pages_read,
        fragments_new=report.fragments_new if report else 0,
        pairs_judged=report.pairs_judged if report else 0,
        pairs_from_cache=report.pairs_from_cache if report else 0,
        requests=sum(c.get("requests", 0) for c in usage.values()),
        cache_hits=sum(c.get("cache_hits", 0) for c in usage.values()),
        server_requests=len(replay.requests()) - logged_before,
        api=usage,
    )


def run_citation_bench(
    settings: Settings,
    sources: int = 10,
    candidates: int = 100,
    seed: int = 0,
    *,
    stage1_top_k: int = 30,
    llm: bool = True,
    pages: int = 1000,
    runs: int = 2,
    rater: str | None = None,
) -> CitationBenchResult:
    """``rater``: Stage 2's rater (default: ``LYRA_CITATION_STAGE2_RATER``); ``llm`` false gives an LLM rater no
    LLM (Stage 2 then ranks by the Stage-1 scores)."""
    corpus = synthetic_corpus(sources=sources, candidates_per_source=candidates, seed=seed)
    corpus_candidates, with_abstract = corpus_counts(corpus)
    source_dois = [p.doi for p in corpus.papers if p.id.removeprefix("src-").isdigit() and p.doi]
    info, password = resolve_connection(settings)
    with tempfile.TemporaryDirectory(prefix="lyra-bench-") as state, ReplayServer(corpus) as replay:
        bench_settings = settings.model_copy(
            update={
                "state_dir": Path(state),  # empty FAISS index, NLI cache and LLM answer cache
                "neo4j_uri": info.uri,
                "neo4j_username": info.username,
                "neo4j_password": SecretStr(password),
            }
        )
        api_settings = bench_settings.model_copy(
            update={
                **replay.settings_overrides(),
                "scholarly_cache_path": Path(state) / "scholarly.sqlite",
                "citation_top_n_papers": len(source_dois),
                "citation_candidates_per_paper": max(candidates, bench_settings.academic.citation_candidates_per_paper),
                "citation_stage1_top_k": stage1_top_k,
                "citation_stage2_rater": rater or bench_settings.academic.citation_stage2_rater,
                "s2_requests_per_second": API_REQUESTS_PER_SECOND,
                "openalex_requests_per_second": API_REQUESTS_PER_SECOND,
            }
        )
        services = build_services(bench_settings)
        urls: set[str] = set()  # of every paper page the runs wrote
        try:
            if services.tasks.tasks.exists(TASK_ID):
                services.cleanup.cleanup(TASK_ID, "hard")
            services.tasks.create_task(TASK_ID, CLAIM)
            topics = [c["text"] for c in services.store.run("tasks/task_claims", {"task_id": TASK_ID})]
            start = time.perf_counter()
            services.models.embedder.embed(["warm-up"])  # model load, outside the timed stages
            embedder_load = time.perf_counter() - start
            llm_load = 0.0
            llm_rater = llm and api_settings.academic.citation_stage2_rater.startswith("llm")
            if (
                llm_rater or bench_settings.models.nli_backend == "llm" or bench_settings.models.stance_use_llm
            ):  # Stage 2, the judge
                start = time.perf_counter()
                services.models.llm.generate_json(
                    [{"role": "user", "content": "Answer with a usefulness of 5."}],
                    {"type": "object", "properties": {"usefulness": {"type": "integer"}}, "required": ["usefulness"]},
                    max_tokens=16,
                )
                llm_load = time.perf_counter() - start
            start = time.perf_counter()
            services.models.nli.judge([(CLAIM, CLAIM)])  # the stance judge's models
            judge_load = time.perf_counter() - start
            done = [
                _citation_run(services, api_settings, replay, source_dois, topics, llm, urls)
                for _ in range(max(runs, 1))
            ]
            rate = measure_ingest(services, abstract_documents(pages, seed + 1000), TASK_ID) if pages else None
        finally:
            try:
                if services.tasks.tasks.exists(TASK_ID):
                    services.cleanup.cleanup(TASK_ID, "hard")
                services.store.run("cleanup/delete_pages_by_url_prefix", {"prefix": ABSTRACT_URL, "batch_size": 5000})
                # the papers' pages the hard clean-up keeps: unread ones and read ones with unjudged fragments only
                services.store.run("cleanup/delete_pages_by_urls", {"urls": sorted(urls - {""}), "batch_size": 5000})
            finally:
                services.close()
    return CitationBenchResult(
        sources=sources,
        candidates_per_source=candidates,
        seed=seed,
        stage1_top_k=stage1_top_k,
        stage2_top_k=api_settings.academic.citation_stage2_top_k,
        llm=llm,
        stage2_rater=api_settings.academic.citation_stage2_rater,
        corpus_candidates=corpus_candidates,
        corpus_candidates_with_abstract=with_abstract,
        embedder_load_seconds=embedder_load,
        llm_load_seconds=llm_load,
        judge_load_seconds=judge_load,
        runs=done,
        ingest=rate,
    )
