"""The composition root: the one place where concrete classes are chosen and wired.

``build_services(settings)`` connects to Neo4j and wires the application layer; ``build_http_app(services)`` builds
the MCP server and hands it, with the operations and the worker pool, to the REST adapter. Only this module and the
CLI may import the adapters (``lyra.api``, ``lyra.mcp``); tests/unit/architecture/test_layers.py enforces it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from lyra.core.settings import PipelineSettings, Settings
from lyra.graph.catalog import CypherCatalog
from lyra.graph.connection import ConnectionInfo, connect
from lyra.graph.evidence import EvidenceRepository
from lyra.graph.query_guard import GuardLimits
from lyra.graph.store import GraphStore
from lyra.graph.tasks import TaskRepository
from lyra.ml.claims import ClaimExtractor
from lyra.ml.learned_rules import CITATION_DETECTION, CITATION_USEFULNESS, CLAIM_EXTRACTION, EVIDENCE_RANKING
from lyra.models.timeline import RunKind
from lyra.services.calibration import CalibrationService
from lyra.services.cleanup import CleanupService
from lyra.services.domains import DomainGate
from lyra.services.explore import ExploreService
from lyra.services.feedback import FeedbackService
from lyra.services.interventions import CookieStore, InterventionService
from lyra.services.jobs import ClaimedJob, JobService, WorkerPool, route_jobs
from lyra.services.judge_calibration import JudgeCalibrationService
from lyra.services.judging import JudgingService
from lyra.services.learning import LearningService
from lyra.services.learning_jobs import LEARNING_PROPOSALS, ProposalsExecutor
from lyra.services.materials import MaterialsService
from lyra.services.operations import Operations
from lyra.services.refresh import RefreshService, RetractionService
from lyra.services.research import ResearchExecutor
from lyra.services.schedule import TASK_REFRESH, RefreshExecutor, RefreshScheduler, ScheduleService
from lyra.services.status import StatusService
from lyra.services.tasks import TaskService
from lyra.services.timeline import TimelineService
from lyra.services.webhooks import WebhookSecrets, WebhookService
from lyra.sources.domain_policy import ReloadingDomainPolicy
from lyra.sources.scholarly.retractions import build_retraction_checker

if TYPE_CHECKING:
    from fastapi import FastAPI
    from mcp.server.mcpserver import MCPServer

    from lyra.ml.factory import Models
    from lyra.ml.ranking import CandidateRanker, CrossEncoderReranker
    from lyra.ml.vector_index import FragmentIndex
    from lyra.services.academic import AcademicResearch
    from lyra.services.ingest import IngestService
    from lyra.services.web_citations import CitationDetector
    from lyra.services.web_search import WebSearch
    from lyra.sources.search import SearchEngine
    from lyra.sources.web import WebFetcher


@dataclass
class Services:
    settings: Settings
    connection: ConnectionInfo
    store: GraphStore
    task_repo: TaskRepository
    evidence: EvidenceRepository
    tasks: TaskService
    materials: MaterialsService
    cleanup: CleanupService
    jobs: JobService
    status: StatusService
    domains: DomainGate
    feedback: FeedbackService
    calibration: CalibrationService
    interventions: InterventionService
    _closers: list[object] = field(default_factory=list)

    @cached_property
    def operations(self) -> Operations:
        """The application layer the MCP server, the REST API and the CLI share."""
        return Operations(
            store=self.store,
            task_repo=self.task_repo,
            tasks=self.tasks,
            jobs=self.jobs,
            status=self.status,
            materials=self.materials,
            cleanup=self.cleanup,
            explore=self.explore,
            connection=self.connection,
            domains=self.domains,
            feedback=self.feedback,
            calibration=self.calibration,
            ingest=lambda: self.ingest,
            interventions=self.interventions,
            learning=lambda: self.learning,
            judging=self.judging,
            timeline=self.timeline,
            refresh=lambda: self.refresh,
            judge_calibration=JudgeCalibrationService(
                self.store, self.task_repo, self.settings.judging.judge_calibration_min
            ),
            schedule=self.schedule,
            webhooks=self.webhooks,
        )

    @cached_property
    def judging(self) -> JudgingService:
        """The judges' pull door and review queue; the unjudged queue loads the ranking models."""
        return JudgingService(
            self.store,
            self.task_repo,
            self.settings.judging,
            pending_pairs=lambda task_id: self.ingest.pending_pairs(task_id),
            evidence_passage_chars=self.settings.pipeline.evidence_passage_chars,
        )

    @cached_property
    def timeline(self) -> TimelineService:
        """Runs, claim snapshots, get_changes and claim timelines; a run that moves claims reaches the task's
        webhook."""
        timeline = TimelineService(self.store, self.task_repo, self.materials)
        self.webhooks.attach(timeline)
        return timeline

    @cached_property
    def webhooks(self) -> WebhookService:
        """Tasks' webhooks: set_task_webhook, and the signed POST after each run that moved a task's claims."""
        from lyra.sources.web.fetcher import user_agent

        return WebhookService(
            self.store,
            self.task_repo,
            self.settings.web.fetch_allow_hosts,
            WebhookSecrets(webhook_secrets_file(self.settings)),
            user_agent=user_agent(self.settings.web, self.settings.scholarly.contact_email),
        )

    @cached_property
    def retractions(self) -> RetractionService:
        """Retraction checks of a task's DOI pages, applied to the graph (Crossref and OpenAlex, read fresh)."""
        scholarly = self.settings.scholarly
        return RetractionService(
            self.store, self.task_repo, self.timeline, checker=lambda: build_retraction_checker(scholarly)
        )

    @cached_property
    def refresh(self) -> RefreshService:
        """refresh_task: a retraction check, the task's known web pages re-checked with a conditional GET, and the
        task's earlier targets queued again."""
        from lyra.services.freshness import PageRechecker
        from lyra.services.paper_freshness import PaperRechecker
        from lyra.sources.scholarly.provider import build_sources

        s = self.settings
        papers = PaperRechecker(
            self.store,
            self.jobs,
            lambda budget: build_sources(s.scholarly, s.scholarly_cache_file, max_requests=budget, cache_reads=False),
        )
        pages = PageRechecker(self.store, self.jobs, lambda: self.web_fetcher)
        return RefreshService(self.store, self.jobs, self.retractions, self.timeline, pages, papers)

    @cached_property
    def schedule(self) -> ScheduleService:
        """Tasks' refresh schedules: set by refresh_task, claimed and queued by :meth:`running_workers`."""
        return ScheduleService(self.store, self.jobs, self.settings.jobs.schedule_min_seconds)

    @cached_property
    def learning(self) -> LearningService:
        """The learning loop: feedback records, proposals, their review, the learned rules in force; each rule
        deployment is a recorded 'rule' run of the tasks it bears on."""
        learning = LearningService(
            self.store,
            self.settings.learning,
            self.settings.paths.state_dir,
            self.calibration,
            embedder=lambda: self.models.embedder,
            judge_factory=lambda rules, examples: self.models.stance_judge(rules, examples),
            extractor_factory=lambda rules: ClaimExtractor(
                self.models.llm,
                self.settings.paths.prompts_dir,
                rules=rules,
                embed=lambda t: self.models.embedder.embed(t),
            ),
            rank_task=lambda task_id, rule_sets: self.ingest.rank_task(task_id, rule_sets),
        )
        timeline = self.timeline

        def deployed(component: str, version: int, cause: str) -> None:
            timeline.record_rule_deployment(component, version, cause)

        learning.on_rules_changed = deployed
        return learning

    def worker_pool(self) -> WorkerPool:
        """Background workers for queued jobs (models load when the first job needs them)."""
        s = self.settings
        pool = WorkerPool(
            self.store,
            ResearchExecutor(
                self.store,
                lambda: self.ingest,
                s.paths.allowed_roots,
                academic=self.academic,
                max_api_requests=s.academic.scholarly_max_requests_per_task,
                web=lambda: self.web_fetcher,
                search=lambda: self.web_search,
                enrichment_max=s.academic.identifier_enrichment_max,
                enrich_local=s.academic.identifier_enrichment_local,
                citations=(lambda: self.citation_detector) if s.web.web_citation_detection else None,
                interventions=self.interventions,
                academic_search=s.academic.academic_search,
                gate=self.domains,
            ),
            workers=s.jobs.job_workers,
            poll_seconds=s.jobs.job_poll_seconds,
            heartbeat_seconds=s.jobs.job_heartbeat_seconds,
            stale_seconds=s.jobs.job_stale_seconds,
            max_attempts=s.jobs.job_max_attempts,
            name=s.jobs.worker_name,
        )
        # a task's targets go to the research executor above; the service's own jobs to theirs
        pool.executor = route_jobs(
            pool.executor,
            {
                LEARNING_PROPOSALS: ProposalsExecutor(lambda: self.learning),
                TASK_REFRESH: RefreshExecutor(lambda: self.refresh),
            },
        )
        timeline = self.timeline

        def record(job: ClaimedJob, state: str, seconds: float) -> None:
            started = datetime.now(UTC) - timedelta(seconds=seconds)
            kind: RunKind = "research" if job.kind == "query" else "ingest"
            timeline.record_quietly(job.task_id, kind, job.id, started)

        pool.on_finished = record
        self.jobs.on_queued(pool.wake)
        return pool

    @contextmanager
    def running_workers(self, *, schedule: bool = False) -> Iterator[WorkerPool]:
        """The worker pool, started for the duration of the block and stopped after it; with ``schedule`` (the
        servers) also the loop that queues tasks' scheduled refreshes when they are due."""
        pool = self.worker_pool()
        scheduler = RefreshScheduler(self.schedule, self.settings.jobs.schedule_poll_seconds) if schedule else None
        pool.start()
        if scheduler is not None:
            scheduler.start()
        try:
            yield pool
        finally:
            if scheduler is not None:
                scheduler.stop()
            pool.stop()

    @cached_property
    def models(self) -> Models:
        """The embedder, LLM and NLI judge; nothing heavy loads until first used."""
        from lyra.ml.factory import Models
        from lyra.ml.learned_rules import STANCE_LLM, STANCE_TRAINED

        return Models(
            self.settings,
            stance_rules=self.learning.rulebook.source(STANCE_LLM),
            trained_examples=self.learning.rulebook.source(STANCE_TRAINED),
        )

    @cached_property
    def fragment_index(self) -> FragmentIndex:
        """The FAISS fragment index: this process's cache of the embeddings in Neo4j, rebuilt or caught up when
        opened and caught up again before searches (what other workers wrote)."""
        from lyra.services.fragment_index import open_fragment_index

        embedder = self.models.embedder
        embedder.embed(["warm-up"])  # loads the model and fixes its dimension
        path = self.settings.paths.state_dir / "faiss" / "fragments"
        return open_fragment_index(self.store, path, embedder.dimension, self.settings.pipeline.index_sync_seconds)

    @cached_property
    def explore(self) -> ExploreService:
        """Views, read-only ad-hoc Cypher and similarity search (models load only for the search)."""
        return ExploreService(
            self.store,
            embedder=lambda: self.models.embedder,
            index=lambda: self.fragment_index,
            query_timeout=self.settings.graph.query_timeout,
            query_max_bytes=self.settings.graph.query_max_bytes,
            query_limits=GuardLimits(
                max_tokens=self.settings.graph.query_max_tokens,
                max_depth=self.settings.graph.query_max_depth,
                max_elements=self.settings.graph.query_max_elements,
                max_iteration_depth=self.settings.graph.query_max_iteration_depth,
            ),
        )

    @cached_property
    def ingest(self) -> IngestService:
        from lyra.ml.cache import CachedJudge, NLICache
        from lyra.ml.ranking import CrossEncoderReranker
        from lyra.services.ingest import IngestService

        s = self.settings
        cache = NLICache(s.paths.state_dir / "cache" / "nli.sqlite")
        self._closers.append(cache)
        reranker = CrossEncoderReranker(s.models.reranker_model) if s.models.reranker_model else None
        return IngestService(
            settings=s.pipeline,
            prompts_dir=s.paths.prompts_dir,
            pdf_max_pages=s.web.web_pdf_max_pages,
            store=self.store,
            evidence=self.evidence,
            tasks=self.tasks,
            embedder=self.models.embedder,
            judge=CachedJudge(self.models.nli, cache),
            index=self.fragment_index,
            domains=self.domains.policy,
            ranker=candidate_ranker(s.pipeline, reranker),
            llm=self.models.llm,
            gate=self.domains,
            calibrator=self.calibration.active_calibrator,
            claim_rules=self.learning.rulebook.source(CLAIM_EXTRACTION),
            ranking_rules=self.learning.rulebook.source(EVIDENCE_RANKING),
        )

    @cached_property
    def web_fetcher(self) -> WebFetcher:
        """The process's one web fetcher: every fetch asks the domain gate first; the per-domain rate and daily page
        counts are held in Neo4j (shared by every worker of every process); the robots.txt cache by its threads."""
        from lyra.services.politeness import GraphPageCounter, GraphRateLimiter
        from lyra.sources.web import WebFetcher

        fetcher = WebFetcher(
            self.settings.web,
            self.domains,
            contact_email=self.settings.scholarly.contact_email,
            counter=GraphPageCounter(self.store),
            limiter=GraphRateLimiter(self.store),
        )
        self._closers.append(fetcher)
        return fetcher

    @cached_property
    def citation_detector(self) -> CitationDetector:
        """Web citation detection of fetched pages (the local LLM loads at the first link it is asked about)."""
        from lyra.services.web_citations import CitationDetector

        models = self.models
        return CitationDetector(
            self.settings.web,
            self.evidence,
            self.domains,
            lambda: models.llm,
            self.settings.paths.prompts_dir,
            rules=self.learning.rulebook.source(CITATION_DETECTION),
        )

    @cached_property
    def search_engines(self) -> tuple[list[SearchEngine], list[str]]:
        """The web search engines (LYRA_WEB_SEARCH_ENGINES) over the process's fetcher, and notes on any left out.
        Built once: the browser engine keeps its chromium between queries."""
        from lyra.sources.search import build_engines

        fetcher = self.web_fetcher
        engines, notes = build_engines(self.settings.search, self.settings.web.chromium_path, fetcher)
        self._closers.extend(engines)
        return engines, notes

    @cached_property
    def web_search(self) -> WebSearch:
        """The web part of `query` jobs: engines → ranked candidate URLs (the ingest path's embedder and ranker, the
        domain gate's category weights) → pages through the one fetcher."""
        from lyra.services.web_search import WebSearch

        engines, notes = self.search_engines
        ingest = self.ingest
        return WebSearch(
            self.settings.search,
            self.settings.pipeline,
            self.store,
            engines,
            self.web_fetcher,
            ingest.embedder,
            ingest.ranker,
            self.domains,
            notes,
            ranking_rules=self.learning.rulebook.source(EVIDENCE_RANKING),
            interventions=self.interventions,
        )

    def academic(self, max_requests: int | None = None, *, settings: Settings | None = None) -> AcademicResearch:
        """The academic flow over fresh API clients that may send at most ``max_requests`` requests (the task's
        remaining budget); the response cache on disk is shared by every client. ``settings``: other API
        addresses or citation-filter settings than the service's (the demo's and the tests' local API server)."""
        from lyra.services.academic import AcademicResearch, CitationFilter
        from lyra.sources.scholarly.provider import build_sources

        s = settings or self.settings
        models = self.models
        return AcademicResearch(
            s.academic,
            self.evidence,
            build_sources(s.scholarly, s.scholarly_cache_file, max_requests=max_requests),
            CitationFilter(
                s.academic,
                models.embedder,
                lambda: models.llm,
                s.paths.prompts_dir,
                rules=self.learning.rulebook.source(CITATION_USEFULNESS),
                ranker=candidate_ranker(s.pipeline),
            ),
            models.embedder,
        )

    def close(self) -> None:
        for closer in self._closers:
            closer.close()  # type: ignore[attr-defined]
        self.store.close()


def candidate_ranker(settings: PipelineSettings, reranker: CrossEncoderReranker | None = None) -> CandidateRanker:
    """BM25 + embedding fusion with the configured weights (LYRA_RANK_*), and the reranker after it when given."""
    from lyra.ml.ranking import CandidateRanker

    return CandidateRanker(
        settings.rank_bm25_top_n, settings.rank_weight_bm25, settings.rank_weight_embedding, reranker
    )


def webhook_secrets_file(settings: Settings) -> Path:
    """Where tasks' webhook signing secrets are kept (beside the cookies a person gave; never in the graph)."""
    return settings.paths.state_dir / "auth" / "webhooks.json"


def build_services(settings: Settings, *, apply_schema: bool = True) -> Services:
    catalog = CypherCatalog.load(settings.paths.cypher_dir)
    driver, info = connect(settings)
    store = GraphStore(driver, catalog, settings)
    if apply_schema:
        store.apply_schema()
    task_repo = TaskRepository(store)
    evidence = EvidenceRepository(store, settings.graph.write_batch_size, settings.graph.write_parallelism)
    policy = ReloadingDomainPolicy(
        settings.paths.domains_file, check_interval=settings.trust.domain_policy_check_seconds
    )
    domains = DomainGate(store, policy, settings.trust)
    jobs = JobService(store, task_repo, settings.paths.allowed_roots)
    interventions = InterventionService(
        store, task_repo, CookieStore(settings.paths.state_dir / "auth" / "cookies.json"), wake=jobs.notify_queued
    )
    webhook_secrets = WebhookSecrets(webhook_secrets_file(settings))

    def forget_secrets(task_id: str) -> int:
        """A task's secrets kept out of the graph go with it: its cookies and its webhook's signing secret."""
        return interventions.forget_task(task_id) + webhook_secrets.drop_task(task_id)

    return Services(
        settings=settings,
        connection=info,
        store=store,
        task_repo=task_repo,
        evidence=evidence,
        tasks=TaskService(task_repo, evidence),
        materials=MaterialsService(
            store,
            task_repo,
            settings.graph.materials_parallel_queries,
            passage_chars=settings.pipeline.evidence_passage_chars,
        ),
        cleanup=CleanupService(store, task_repo, settings.graph.cleanup_batch_size, forget_secrets),
        jobs=jobs,
        status=StatusService(
            store,
            task_repo,
            domains.state,
            settings.academic.scholarly_max_requests_per_task,
            interventions.summary,
            pair_budget=settings.pipeline.task_pair_budget,
            dangerous_pages=domains.dangerous_pages,
        ),
        domains=domains,
        feedback=FeedbackService(store, task_repo, domains, settings.judging.judging_mcp_edge_correct),
        calibration=CalibrationService(store),
        interventions=interventions,
    )


def build_mcp_server(services: Services) -> MCPServer:
    """The MCP server over the operations (stdio for `lyra mcp`; mounted at /mcp by build_http_app)."""
    from lyra.mcp.server import create_mcp_server

    return create_mcp_server(services.operations, changes_poll_seconds=services.settings.api.mcp_changes_poll_seconds)


def build_http_app(services: Services, *, workers: bool = True, mcp: bool = True) -> FastAPI:
    """The HTTP app of `lyra serve`: REST under /api/v1, MCP streamable HTTP at /mcp (when ``mcp``), report pages;
    ``workers`` runs the job worker pool while the app runs."""
    from lyra.api.app import create_app

    return create_app(
        services.operations,
        services.settings.api,
        mcp_server=build_mcp_server(services) if mcp else None,
        background=(lambda: services.running_workers(schedule=True)) if workers else None,
    )
