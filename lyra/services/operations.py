"""Lyra's operations: the one application layer the MCP server, the REST API and the CLI call.

Each method takes a request model and returns a response model from :mod:`lyra.models.api`; the adapters only
translate transport shapes and errors, so an MCP tool and its REST route cannot drift apart.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from lyra.core.errors import ConfigError, ConflictError, InvalidInputError
from lyra.core.ids import task_id_for
from lyra.core.settings import JudgingSettings
from lyra.core.text import question_cue
from lyra.graph.connection import ConnectionInfo
from lyra.graph.store import GraphStore, to_plain
from lyra.graph.tasks import TaskRepository
from lyra.models.api import (
    MATERIALS_PAGE_MAX,
    AddClaimsRequest,
    AddClaimsResponse,
    AddedClaimInfo,
    AuthQueue,
    CollectGarbageRequest,
    CreateTaskRequest,
    CreateTaskResponse,
    EvidenceGraph,
    GarbageReport,
    GetAuthQueueRequest,
    GetEvidenceGraphRequest,
    GetJobRequest,
    GetMaterialsRequest,
    GetStatusRequest,
    GraphEdge,
    Health,
    JobInfo,
    JudgeRemainingRequest,
    JudgeRemainingResponse,
    Materials,
    MaterialsOptions,
    QueryGraphRequest,
    QueryResult,
    QueryViewRequest,
    QueueReferenceCandidatesRequest,
    QueueReferenceCandidatesResponse,
    QueueTargetsRequest,
    QueueTargetsResponse,
    RescoreReport,
    RescoreRequest,
    ResolveAuthRequest,
    ResolveAuthResponse,
    SearchResults,
    StopTaskRequest,
    StopTaskResponse,
    TaskList,
    TaskStatus,
    TaskSummary,
    VectorSearchRequest,
    ViewList,
)
from lyra.models.export import ExportRequest, ExportResult
from lyra.models.ingest import IngestReport, IngestRequest, ResearchRequest, ResearchStart
from lyra.models.judge_calibration import GetJudgeCalibrationRequest, JudgeCalibrationReport
from lyra.models.judging import (
    JudgeWithAssistantRequest,
    JudgeWithAssistantResponse,
    NextJudgments,
    NextJudgmentsRequest,
    ReviewQueue,
    ReviewQueueRequest,
    Sampler,
    SubmitJudgmentsRequest,
    SubmitJudgmentsResponse,
)
from lyra.models.learning import (
    ApproveProposalRequest,
    FeedbackForComponentRequest,
    FeedbackRecord,
    FeedbackRecordList,
    FindSimilarRequest,
    GenerateProposalsRequest,
    GenerateProposalsResponse,
    GetFeedbackRequest,
    GetProposalRequest,
    ListProposalsRequest,
    ListRulesRequest,
    Proposal,
    ProposalList,
    ProposalsJob,
    ProposeRuleRequest,
    RejectProposalRequest,
    RetireRuleRequest,
    RollbackRulesRequest,
    RuleList,
    SimilarRecords,
)
from lyra.models.refresh import SCHEDULE_MIN_SECONDS, RefreshRequest, RefreshResult
from lyra.models.timeline import (
    Changes,
    ClaimTimeline,
    GetChangesRequest,
    GetClaimTimelineRequest,
    RunsAfter,
)
from lyra.models.trust import (
    CalibrationMetricsRequest,
    CalibrationResponse,
    CalibrationRollbackRequest,
    CheckDomainRequest,
    DomainDecision,
    FeedbackRequest,
    FeedbackResponse,
)
from lyra.models.webhooks import SetWebhookRequest, WebhookSetting
from lyra.services.calibration import CalibrationService
from lyra.services.cleanup import CleanupService
from lyra.services.domains import DomainGate
from lyra.services.explore import ExploreService, graph_node, screened
from lyra.services.export import ExportService
from lyra.services.feedback import FeedbackService
from lyra.services.graph_import import ImportReport, load_graph_file
from lyra.services.ingest import IngestService, Progress
from lyra.services.interventions import InterventionService
from lyra.services.jobs import JobService
from lyra.services.judge_calibration import JudgeCalibrationService
from lyra.services.judging import JudgingService
from lyra.services.learning import LearningService
from lyra.services.learning_jobs import queue_proposals
from lyra.services.materials import MaterialsService, materials_json
from lyra.services.refresh import RefreshService
from lyra.services.research import research_claims
from lyra.services.schedule import ScheduleService
from lyra.services.status import StatusService
from lyra.services.tasks import TaskService
from lyra.services.timeline import TimelineService
from lyra.services.webhooks import WebhookService


class Operations:
    def __init__(
        self,
        store: GraphStore,
        task_repo: TaskRepository,
        tasks: TaskService,
        jobs: JobService,
        status: StatusService,
        materials: MaterialsService,
        cleanup: CleanupService,
        explore: ExploreService,
        connection: ConnectionInfo,
        domains: DomainGate,
        feedback: FeedbackService,
        calibration: CalibrationService,
        ingest: Callable[[], IngestService],
        interventions: InterventionService,
        learning: Callable[[], LearningService] | None = None,
        judging: JudgingService | None = None,
        timeline: TimelineService | None = None,
        refresh: Callable[[], RefreshService] | None = None,
        judge_calibration: JudgeCalibrationService | None = None,
        schedule: ScheduleService | None = None,
        webhooks: WebhookService | None = None,
    ) -> None:
        self.store = store
        self.task_repo = task_repo
        self.tasks = tasks
        self.jobs = jobs
        self._status = status
        self._materials = materials
        self.cleanup = cleanup
        self.explore = explore
        self.connection = connection
        self.domains = domains
        self._feedback = feedback
        self.calibration = calibration
        self._ingest = ingest  # built on first use: it loads the models
        self.timeline = timeline or TimelineService(store, task_repo, materials)
        self.interventions = interventions
        self._learning = learning
        self._judging = judging
        self._refresh = refresh
        self.judge_calibration = judge_calibration or JudgeCalibrationService(
            store, task_repo, JudgingSettings().judge_calibration_min
        )
        self.schedule = schedule or ScheduleService(store, jobs, SCHEDULE_MIN_SECONDS)
        self._webhooks = webhooks

    @property
    def learning(self) -> LearningService:
        if self._learning is None:
            raise ConfigError("the learning loop is not wired into these operations")
        return self._learning()

    @property
    def _judges(self) -> JudgingService:
        if self._judging is None:
            raise ConfigError("the judging door is not wired into these operations")
        return self._judging

    # ------------------------------------------------------------------ service
    def health(self) -> Health:
        """Lyra answers and Neo4j is reachable (the server's version)."""
        return Health(neo4j=self.store.ping())

    # ------------------------------------------------------------------ tasks
    def create_task(self, request: CreateTaskRequest) -> CreateTaskResponse:
        config = request.config
        task_id = config.task_id or task_id_for(request.hypothesis)
        if config.task_id is None and self.task_repo.exists(task_id):
            raise ConflictError(
                f"a task with this hypothesis already exists: {task_id!r}",
                hint="call get_status on it, or give config.task_id to start a separate task",
            )
        as_claim, notes = self._hypothesis_as_claim(request.hypothesis, config.hypothesis_as_claim, config.claims)
        created = self.tasks.create_task(task_id, request.hypothesis, hypothesis_as_claim=as_claim)
        claim_ids = list(created.get("claim_ids", []))
        # one claim per text (claim_key): a claim given twice, or the hypothesis again, is held once, and said so
        added = self.tasks.add_claims_reported(task_id, config.claims) if config.claims else []
        claim_ids = list(dict.fromkeys([*claim_ids, *(claim.claim_id for claim in added)]))
        duplicates = [text for text, claim in zip(config.claims, added, strict=True) if not claim.created]
        if duplicates:
            notes.append(
                f"{len(duplicates)} of config.claims repeated a claim given before (the same text ignoring case, "
                "extra whitespace and trailing punctuation) and were held once: see duplicates_ignored"
            )
        if config.assistant_sampling:
            self.store.run("judging/set_task_sampling", {"task_id": task_id, "enabled": True})
        if config.max_pages is not None or config.max_seconds is not None:
            self.store.run(
                "jobs/set_task_budget",
                {"task_id": task_id, "max_pages": config.max_pages, "max_seconds": config.max_seconds},
            )
        return CreateTaskResponse(
            task_id=task_id,
            hypothesis=created["hypothesis"],
            claim_ids=claim_ids,
            status=created["status"],
            next_step="queue_targets(task_id, targets) to gather evidence, then get_status(task_id, wait=...)",
            notes=notes,
            duplicates_ignored=duplicates,
        )

    def add_claims(self, request: AddClaimsRequest) -> AddClaimsResponse:
        """Add claims to an existing task; a claim the task already holds (same text, ignoring case, extra
        whitespace and trailing punctuation) is returned, not added again."""
        added = self.tasks.add_claims_reported(request.task_id, request.claims)
        created = sum(claim.created for claim in added)
        return AddClaimsResponse(
            task_id=request.task_id,
            claims=[AddedClaimInfo(claim_id=c.claim_id, text=c.text, created=c.created) for c in added],
            created=created,
            existing=len(added) - created,
            next_step="judge_remaining(task_id) judges new claims against the task's fragments; queue_targets "
            "gathers more sources; get_materials shows them",
        )

    @staticmethod
    def _hypothesis_as_claim(
        hypothesis: str, wanted: bool, claims: list[str], field: str = "config.claims"
    ) -> tuple[bool, list[str]]:
        """Whether the hypothesis becomes the task's first claim: as asked, unless it is a question, which only names
        the task (decision record 0010); a question then needs claims (``field``), the statements that answer it."""
        cue = question_cue(hypothesis)
        if cue is None:
            return wanted, []
        if not claims:
            raise InvalidInputError(
                field,
                f"the hypothesis is a question ({cue}), and a question is never judged; give the claims that answer "
                f"it, as statements, in {field}",
                hint=f"e.g. hypothesis 'Does access to microcredit increase household consumption?' with {field} "
                "['Access to microcredit increases household consumption']; or state the hypothesis as a claim",
            )
        note = f"the hypothesis is a question ({cue}): it names the task and is not judged; the claims are {field}"
        return False, [note]

    def list_tasks(self) -> TaskList:
        """All tasks, newest first, with their claim counts."""
        return TaskList(tasks=[TaskSummary.model_validate(t) for t in self.tasks.list_tasks()])

    def task_exists(self, task_id: str) -> bool:
        return self.task_repo.exists(task_id)

    def queue_targets(self, request: QueueTargetsRequest) -> QueueTargetsResponse:
        return self.jobs.queue(request)

    def queue_reference_candidates(self, request: QueueReferenceCandidatesRequest) -> QueueReferenceCandidatesResponse:
        return self.jobs.queue_reference_candidates(request)

    def get_status(self, request: GetStatusRequest) -> TaskStatus:
        return self._status.status(request)

    def stop_task(self, request: StopTaskRequest) -> StopTaskResponse:
        cancelled, running = self.jobs.stop(request.task_id, immediate=request.mode == "immediate")
        result = None
        if request.cleanup != "none":
            result = self.cleanup.cleanup(request.task_id, "soft" if request.cleanup == "soft" else "hard").model_dump()
        return StopTaskResponse(
            task_id=request.task_id,
            mode=request.mode,
            cancelled_jobs=cancelled,
            running_jobs=running,
            cleanup=request.cleanup,
            cleanup_result=result,
            resumable=request.cleanup == "none",
        )

    # ------------------------------------------------------------ a human in the loop
    def get_auth_queue(self, request: GetAuthQueueRequest) -> AuthQueue:
        """The task's intervention items (CAPTCHA / login / consent walls its jobs met), pending first."""
        return self.interventions.queue(request)

    def resolve_auth(self, request: ResolveAuthRequest) -> ResolveAuthResponse:
        """A person's decision on one item: retry, skip, or cookie (kept for the task and domain, never shown)."""
        return self.interventions.resolve(request)

    def collect_garbage(self, request: CollectGarbageRequest) -> GarbageReport:
        """The global orphan sweep (what soft clean-ups leave behind): counts first; removes only when dry_run is
        false and confirm is true (two explicit booleans), else a real run is refused before anything is read."""
        if not request.dry_run and not request.confirm:
            raise InvalidInputError(
                "confirm",
                "a real garbage collection (dry_run=false) deletes data: it also needs confirm=true; nothing was "
                "removed",
                hint="run with dry_run=true first to see the counts, then dry_run=false with confirm=true",
            )
        return self.cleanup.collect_garbage(request.dry_run)

    def rescore_claims(self, request: RescoreRequest) -> RescoreReport:
        """Recompute and store the claims' stored sums from their stance edges (graphs edited by hand), or with
        ``check`` only report the claims whose stored sums differ."""
        return self._materials.rescore(request)

    # ---------------------------------------------------------- synchronous ingest (CLI)
    def ingest(self, request: IngestRequest, progress: Progress | None = None) -> IngestReport:
        """Read local files or folders into a task now (not as a job) and judge its claims; the task is created
        when missing (a question as hypothesis only names it: the claims are ``request.claims``).
        ``progress(counter, n)`` reports documents / fragments / pairs / edges as they happen."""
        if request.hypothesis is not None and not self.task_repo.exists(request.task_id):
            as_claim, _ = self._hypothesis_as_claim(request.hypothesis, True, list(request.claims), "claims")
            if not as_claim:
                self.tasks.create_task(request.task_id, request.hypothesis, hypothesis_as_claim=False)
        started = datetime.now(UTC)
        report = self._ingest().ingest(
            request.paths,
            request.task_id,
            request.claims,
            hypothesis=request.hypothesis,
            extract_claims=request.extract_claims,
            progress=progress,
        )
        self.tasks.mark_ran(report.task_id)  # the task has run, as if its jobs had: not 'created' any more
        self.timeline.record_quietly(report.task_id, "ingest", None, started)
        return report

    def judge_remaining(
        self, request: JudgeRemainingRequest, progress: Progress | None = None
    ) -> JudgeRemainingResponse:
        """Judge the task's pending candidate pairs (above the relevance floor, no stance edge yet) now, best first,
        at most ``max_pairs`` and within the task's pair budget: after claims were added, after the budget was
        raised, or after a job stopped while judging."""
        started = datetime.now(UTC)
        report = self._ingest().judge_remaining(request.task_id, max_pairs=request.max_pairs, progress=progress)
        self.timeline.record_quietly(request.task_id, "judge_remaining", None, started)
        return JudgeRemainingResponse(
            task_id=report.task_id,
            pairs_judged=report.pairs_judged,
            pairs_pending=report.pairs_pending,
            pairs_candidates=report.pairs_ranked,
            pairs_below_floor=report.pairs_below_floor,
            pairs_own_source=report.pairs_own_source,
            pair_budget_left=report.pair_budget_left or 0,
            edges=report.edges,
            skipped=[f"{s.item}: {s.reason}" for s in report.skipped],
            seconds=round(report.seconds_total, 3),
        )

    def start_research(self, request: ResearchRequest) -> ResearchStart:
        """The task for a researched question (id derived from it, as create_task derives one, unless given),
        created when missing or continued, with the claims it judges: a statement is the first claim itself; a
        question never is (decision record 0010): its claims are ``request.claims`` or, without them, the LLM's claims
        for it (:func:`lyra.services.research.research_claims`)."""
        task_id = request.task_id or task_id_for(request.question)
        exists = self.task_repo.exists(task_id)
        existing = [r["text"] for r in self.store.run("tasks/task_claims", {"task_id": task_id})] if exists else []
        question = question_cue(request.question) is not None

        def extract(text: str) -> list[str]:
            from lyra.ml.question_claims import QuestionClaims

            ingest = self._ingest()
            return QuestionClaims(ingest.llm, ingest.prompts_dir).claims(text)

        added, source = research_claims(request.question, request.claims, existing, extract)
        if not exists:
            self.tasks.create_task(task_id, request.question, hypothesis_as_claim=not question)
            if not question:
                existing = [request.question]
        if added:
            self.tasks.add_claims(task_id, added)
        return ResearchStart(
            task_id=task_id,
            created=not exists,
            question=question,
            claims_added=added,
            claims_from=source,
            claims=[*existing, *added],
        )

    def research(self, request: ResearchRequest, progress: Progress | None = None) -> IngestReport:
        """A question researched over a local corpus: :meth:`start_research`, then the corpus read into the task."""
        if not request.corpus:
            raise InvalidInputError("corpus", "give at least one file or folder to read")
        start = self.start_research(request)
        return self.ingest(
            IngestRequest(task_id=start.task_id, paths=request.corpus, extract_claims=request.extract_claims),
            progress,
        )

    def load_graph(self, path: Path) -> ImportReport:
        """Load an evidence graph described in JSON (format: lyra/services/graph_import.py)."""
        return load_graph_file(path, self.tasks, self.tasks.evidence)

    # -------------------------------------------------------------- evidence
    def get_materials(self, request: GetMaterialsRequest) -> Materials:
        """One page of a task's materials (``limit`` claims after ``cursor``; ``next_cursor`` when more follow)."""
        return self._materials.materials(request)

    def get_materials_json(self, request: GetMaterialsRequest) -> Iterator[bytes]:
        """Every claim from ``request.cursor`` on as one JSON document (the shape of :class:`Materials`), produced
        page by page (``request.limit`` claims each) for streaming. The first page is read before this returns, so
        an unknown task or a bad cursor raises here, not halfway through a response."""
        pages = self._materials.pages(request)
        first = next(pages)
        return materials_json(itertools.chain([first], pages))

    def get_changes(self, request: GetChangesRequest) -> Changes:
        """What moved each claim since a run or a moment, and why (new evidence, corrections, judges, retractions)."""
        return self.timeline.changes(request)

    def refresh_task(self, request: RefreshRequest) -> RefreshResult:
        """Retraction states of the task's DOI pages read fresh and applied; its earlier targets queued again."""
        if request.schedule is not None:
            self.schedule.check(request.schedule)  # a period below the minimum is refused before anything runs
        if self._refresh is None:
            raise ConfigError("refresh_task needs the scholarly sources: this Operations was built without them")
        if request.schedule is not None:
            self.task_repo.get(request.task_id)  # NotFoundError before anything is written
            self.schedule.set(request.task_id, request.schedule, request.max_targets, request.max_pages)
        result = self._refresh().refresh(request)
        result.schedule = self.schedule.get(request.task_id)
        return result

    def set_task_webhook(self, request: SetWebhookRequest) -> WebhookSetting:
        """Set or remove the task's webhook (a signed POST after each run that moved its claims)."""
        if self._webhooks is None:
            raise ConfigError("set_task_webhook: this Operations was built without webhooks")
        return self._webhooks.set_webhook(request)

    def runs_after(self, marks: Mapping[str, int | None]) -> list[RunsAfter]:
        """Per task of ``marks``, its run counter and its runs (recorded by any process) numbered above the mark:
        what the MCP server's changes watcher polls for its resource notifications."""
        return self.timeline.runs_after(marks)

    def get_claim_timeline(self, request: GetClaimTimelineRequest) -> ClaimTimeline:
        """Everything that happened to one claim, newest first."""
        return self.timeline.claim_timeline(request)

    def export_evidence(self, request: ExportRequest) -> ExportResult:
        """The task's evidence as a file (CSV, CSL-JSON, BibTeX, RIS or Markdown), from the same reader as
        get_materials (which refuses an unknown task)."""
        return ExportService(self._materials).export(request)

    def get_evidence_graph(self, request: GetEvidenceGraphRequest) -> EvidenceGraph:
        self.task_repo.get(request.task_id)
        row = self.store.run("graph/task_subgraph", {"task_id": request.task_id, "limit": request.limit})[0]
        cypher = (
            f"MATCH p = (:Task {{id: '{request.task_id}'}})-[:HAS_CLAIM]->(:Claim)"
            "<-[:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment)-[:EXTRACTED_FROM]->(:Page) RETURN p LIMIT 300"
        )
        browser = self.connection.browser_url
        return EvidenceGraph(
            task_id=request.task_id,
            nodes=[graph_node(to_plain(n), request.reveal_flagged) for n in row["nodes"]],
            edges=[GraphEdge.model_validate(to_plain(e)) for e in row["edges"]],
            truncated=row["truncated"],
            cypher=cypher,
            browser_url=f"{browser}?cmd=edit&arg={quote(cypher)}" if browser else None,
        )

    # ------------------------------------------------------------- exploring
    def query_graph(self, request: QueryGraphRequest) -> QueryResult:
        result = self.explore.query_graph(request.cypher, request.params, request.options.row_limit)
        return screened(result, request.options.reveal_flagged)

    def list_views(self) -> ViewList:
        return ViewList(views=self.explore.list_views())

    def query_view(self, request: QueryViewRequest) -> QueryResult:
        return screened(self.explore.query_view(request.name, request.params), request.reveal_flagged)

    # ----------------------------------------------------------- trust and control
    def feedback(self, request: FeedbackRequest) -> FeedbackResponse:
        """Apply a feedback action; the learning loop then keeps it as a classified feedback record."""
        started = datetime.now(UTC)
        if self._learning is None:
            response = self._feedback.feedback(request)
            self.timeline.record_quietly(request.task_id, "feedback", response.event_id, started)
            return response
        snapshot = None
        if request.action == "edge_correct":
            snapshot = self.learning.edge_snapshot(request.task_id, request.args.get("edge_id"))
        response = self._feedback.feedback(request)
        self.timeline.record_quietly(request.task_id, "feedback", response.event_id, started)
        record = self.learning.capture(request, response, snapshot)
        return response.model_copy(update={"record_id": record.id, "classification": record.classification})

    # ------------------------------------------------------------ judges
    def next_judgments(self, request: NextJudgmentsRequest) -> NextJudgments:
        """A batch of (claim, passage) pairs for an assistant to judge, chosen by the request's policy."""
        return self._judges.next_judgments(request)

    def submit_judgments(self, request: SubmitJudgmentsRequest) -> SubmitJudgmentsResponse:
        """An assistant's verdicts on the tickets of next_judgments: the good items in one transaction."""
        started = datetime.now(UTC)
        response = self._judges.submit_judgments(request)
        if response.written:
            self.timeline.record_quietly(request.task_id, "judgments", None, started)
        return response

    def judge_with_assistant(
        self, request: JudgeWithAssistantRequest, sampler: Sampler | None = None
    ) -> JudgeWithAssistantResponse:
        """The push door: ask the connected MCP client's model (``sampler``, built by the MCP door from a session
        that declared sampling) to judge a batch; the offline verdict stands where it declines, times out or
        answers outside the label set."""
        started = datetime.now(UTC)
        response = self._judges.judge_with_assistant(request, sampler)
        if response.written:
            self.timeline.record_quietly(request.task_id, "judgments", None, started)
        return response

    def review_queue(self, request: ReviewQueueRequest) -> ReviewQueue:
        """The edges a person should look at first (impact, offline/assistant disagreement)."""
        return self._judges.review_queue(request)

    # ------------------------------------------------------------ learning from reviewers
    def get_feedback(self, request: GetFeedbackRequest) -> FeedbackRecord:
        return self.learning.get_feedback(request)

    def get_feedback_for_component(self, request: FeedbackForComponentRequest) -> FeedbackRecordList:
        return self.learning.feedback_for_component(request)

    def find_similar_feedback(self, request: FindSimilarRequest) -> SimilarRecords:
        return self.learning.find_similar(request)

    def generate_proposals(self, request: GenerateProposalsRequest) -> GenerateProposalsResponse:
        """The batch run here and now (minutes); the doors queue it instead (``queue_proposals``)."""
        return self.learning.generate_proposals(request)

    def queue_proposals(self, request: GenerateProposalsRequest) -> ProposalsJob:
        """The proposal batch as a background job: its id at once; ``get_job`` shows its progress and result."""
        return queue_proposals(self.jobs, request)

    def get_job(self, request: GetJobRequest) -> JobInfo:
        return self.jobs.get_job(request.id)

    def propose_rule(self, request: ProposeRuleRequest) -> Proposal:
        return self.learning.propose_rule(request)

    def list_proposals(self, request: ListProposalsRequest) -> ProposalList:
        return self.learning.list_proposals(request)

    def get_proposal(self, request: GetProposalRequest) -> Proposal:
        return self.learning.get_proposal(request)

    def approve_proposal(self, request: ApproveProposalRequest) -> Proposal:
        return self.learning.approve_proposal(request)

    def reject_proposal(self, request: RejectProposalRequest) -> Proposal:
        return self.learning.reject_proposal(request)

    def list_rules(self, request: ListRulesRequest) -> RuleList:
        return self.learning.list_rules(request)

    def retire_rule(self, request: RetireRuleRequest) -> RuleList:
        return self.learning.retire_rule(request)

    def rollback_rules(self, request: RollbackRulesRequest) -> RuleList:
        return self.learning.rollback_rules(request)

    def check_domain(self, request: CheckDomainRequest) -> DomainDecision:
        decision = self.domains.decide(request.domain)
        rates = self.domains.rejection_rates([decision.domain])
        return decision.model_copy(update={"rejection_rates": rates[0] if rates else None})

    def get_judge_calibration(self, request: GetJudgeCalibrationRequest) -> JudgeCalibrationReport:
        """Each judge of the task measured on the task's own human corrections: agreement, confusion, reliability
        table and, with enough corrections, a fitted mapping of its confidence (reported only)."""
        return self.judge_calibration.report(request)

    def calibration_metrics(self, request: CalibrationMetricsRequest) -> CalibrationResponse:
        return self.calibration.metrics(request)

    def calibration_rollback(self, request: CalibrationRollbackRequest) -> CalibrationResponse:
        return self.calibration.rollback(request)

    # ---------------------------------------------------------------- report
    def report_html(self, task_id: str, evidence_limit: int = 200, changes: GetChangesRequest | None = None) -> str:
        """The evidence report page: materials and the evidence timeline, rendered as one HTML document, with a
        "What changed" section: get_changes (``changes``; default: since the task's latest run) and each moved
        claim's timeline."""
        from lyra.services.report import render_report
        from lyra.services.report_changes import CLAIMS_SHOWN, TIMELINE_EVENTS, changes_view

        materials = self.get_materials(
            GetMaterialsRequest(
                task_id=task_id, options=MaterialsOptions(evidence_limit=evidence_limit), limit=MATERIALS_PAGE_MAX
            )
        )
        timeline = self.explore.query_view("evidence_timeline", {"task_id": task_id}).rows
        rules = self.learning.report_rows() if self._learning is not None else None
        request = changes or GetChangesRequest(task_id=task_id)
        moved = self.timeline.changes(request)
        shown = [move.claim_id for move in moved.claims[:CLAIMS_SHOWN]]
        timelines = self.timeline.claim_timelines(task_id, shown, TIMELINE_EVENTS)
        view = changes_view(moved, timelines, request.confidence_threshold, request.uncertainty_threshold)
        return render_report(materials, timeline, rules=rules, changes=view)

    def vector_search(self, request: VectorSearchRequest) -> SearchResults:
        hits = self.explore.vector_search(
            request.query, request.task_id, request.k, request.kind, reveal=request.reveal_flagged
        )
        return SearchResults(hits=hits)
