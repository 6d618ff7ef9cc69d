"""Tasks and their evidence: `lyra task ...`, `lyra ingest`, `lyra research`, `lyra materials`, `lyra report`,
`lyra demo`. Every command calls :class:`~lyra.services.operations.Operations`, like MCP and REST do."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import typer
from rich.markup import escape
from rich.table import Table

from lyra.cli.common import (
    err,
    handle_errors,
    ingest_progress,
    materials_table,
    open_services,
    operations,
    out,
    print_ingest_summary,
    print_job_results,
    run_jobs,
    settings_from_env,
)
from lyra.core.errors import InvalidInputError
from lyra.models.api import (
    MATERIALS_PAGE_MAX,
    AcademicSearchMode,
    AddClaimsRequest,
    AddClaimsResponse,
    CreateTaskRequest,
    GetAuthQueueRequest,
    GetMaterialsRequest,
    JudgeRemainingRequest,
    Materials,
    MaterialsOptions,
    QueryViewRequest,
    QueueReferenceCandidatesRequest,
    ResolveAuthRequest,
    StopTaskRequest,
    Target,
    TargetOptions,
    TaskConfig,
)
from lyra.models.export import ExportRequest
from lyra.models.ingest import IngestReport, IngestRequest, ResearchRequest, ResearchStart
from lyra.models.refresh import RefreshRequest
from lyra.models.timeline import GetChangesRequest, GetClaimTimelineRequest
from lyra.models.validation import parse_one
from lyra.models.webhooks import SetWebhookRequest

if TYPE_CHECKING:  # imported where used: `lyra --help` stays fast (tests/unit/cli/test_cli_startup.py)
    from lyra.core.settings import Settings
    from lyra.services.operations import Operations

task_app = typer.Typer(help="Create, list and clean up tasks.", no_args_is_help=True)
DEMO_TASK = "demo_corpus"
CleanupChoice = Literal["soft", "hard"]


@task_app.command("create")
@handle_errors
def task_create(
    task_id: str,
    hypothesis: str,
    claim: list[str] = typer.Option(
        [], "--claim", help="a further claim to judge (repeatable); required when the hypothesis is a question"
    ),
) -> None:
    """Create a task; its hypothesis becomes its first claim, unless it is a question: a question only names the
    task, and its claims are the --claim statements."""
    request = parse_one(CreateTaskRequest, {"hypothesis": hypothesis, "config": {"task_id": task_id, "claims": claim}})
    with operations() as ops:
        out.print_json(ops.create_task(request).model_dump_json())


def print_added_claims(added: AddClaimsResponse) -> None:
    """One line per requested claim: added, or already held by the task (then nothing was written)."""
    for claim in added.claims:
        state = "[green]added[/]" if claim.created else "[yellow]already in the task[/]"
        out.print(f"{state} {claim.claim_id}: {escape(claim.text)}", highlight=False)
    out.print(f"{added.created} added, {added.existing} already in the task {added.task_id}", highlight=False)


@task_app.command("add-claims")
@handle_errors
def task_add_claims(
    task_id: str,
    claims: list[str] = typer.Argument(..., help="one or more claims (quote each)"),
    as_json: bool = typer.Option(False, "--json", help="print the same JSON as MCP/REST add_claims"),
) -> None:
    """Add claims to an existing task. A claim the task already holds (the same text, ignoring case, extra spaces and
    trailing punctuation) is not added twice: its id is shown as already in the task. (MCP/REST add_claims.)"""
    request = parse_one(AddClaimsRequest, {"task_id": task_id, "claims": claims})
    with operations() as ops:
        added = ops.add_claims(request)
    if as_json:
        print(added.model_dump_json(indent=2))
        return
    print_added_claims(added)


task_app.command("add-claim", hidden=True)(task_add_claims)  # the singular, as people type it


@task_app.command("list")
@handle_errors
def task_list() -> None:
    """List tasks with their claim counts."""
    with operations() as ops:
        table = Table("id", "status", "claims", "created_at", "hypothesis")
        for t in ops.list_tasks().tasks:
            table.add_row(t.id, t.status or "", str(t.claims), t.created_at or "", t.hypothesis)
        out.print(table)


@task_app.command("cleanup")
@handle_errors
def task_cleanup(
    task_id: str,
    mode: str = typer.Option("soft", "--mode", help="soft: the task, its claims, edges and jobs; hard: also orphans"),
) -> None:
    """Stop a task's jobs and clean it up (decision record 0002): soft removes the task's claims, stance edges and jobs;
    hard also the fragments and pages no other task uses. (The MCP/REST `stop_task` with cleanup.)"""
    if mode not in ("soft", "hard"):
        raise typer.BadParameter("must be 'soft' or 'hard'", param_hint="--mode")
    cleanup: Literal["soft", "hard_orphans_only"] = "soft" if mode == "soft" else "hard_orphans_only"
    with operations() as ops:
        result = ops.stop_task(StopTaskRequest(task_id=task_id, mode="immediate", cleanup=cleanup))
        out.print_json(json.dumps(result.cleanup_result))


@task_app.command("judge-remaining")
@handle_errors
def task_judge_remaining(
    task_id: str,
    max_pairs: int = typer.Option(1000, "--max-pairs", help="judge at most this many pending pairs (1-1000)"),
) -> None:
    """Judge the task's pending pairs: its claims against the passages of the pages it read that reach the relevance
    floor and have no stance edge yet (after adding claims, raising LYRA_TASK_PAIR_BUDGET, or a stopped job)."""
    request = parse_one(JudgeRemainingRequest, {"task_id": task_id, "max_pairs": max_pairs})
    with operations() as ops, ingest_progress() as progress:
        result = ops.judge_remaining(request, progress)
    out.print_json(result.model_dump_json())


@task_app.command("refresh")
@handle_errors
def task_refresh(
    task_id: str,
    max_targets: int = typer.Option(20, "--max-targets", help="queue at most this many earlier targets again"),
    max_pages: int = typer.Option(200, "--max-pages", help="check the retraction status of at most this many pages"),
    schedule: str | None = typer.Option(
        None, "--schedule", help="refresh again every 30m/12h/7d/2w while `lyra serve` runs ('off' clears it)"
    ),
    max_rechecks: int = typer.Option(
        50,
        "--max-rechecks",
        help="ask at most this many known web pages whether they changed (conditional GET), and as many known "
        "papers (their metadata)",
    ),
) -> None:
    """Refresh a task: read the retraction status of its DOI pages fresh (a retracted paper's evidence stops
    counting; concerns and corrections are shown), ask its known web pages whether they changed (a conditional GET;
    a changed page is queued to be read again) and queue its other earlier queries, URLs and DOIs again as jobs that
    `lyra serve` runs. `lyra task changes` then says what moved and why. (MCP/REST refresh_task.)"""
    fields = {
        "task_id": task_id,
        "max_targets": max_targets,
        "max_pages": max_pages,
        "max_rechecks": max_rechecks,
        "schedule": schedule,
    }
    request = parse_one(RefreshRequest, fields)
    with operations() as ops:
        out.print_json(ops.refresh_task(request).model_dump_json())


@task_app.command("webhook")
@handle_errors
def task_webhook(
    task_id: str,
    url: str = typer.Option(None, "--url", help="the http(s) URL to POST to after each run that moved claims"),
    remove: bool = typer.Option(False, "--remove", help="remove the task's webhook"),
    rotate_secret: bool = typer.Option(False, "--rotate-secret", help="make a new signing secret"),
) -> None:
    """Set a task's webhook: after each run that moved its claims, Lyra POSTs a small JSON note signed with
    HMAC-SHA256 (header X-Lyra-Signature) under the task's secret, printed once when it is made. (MCP/REST
    set_task_webhook.)"""
    if (url is None) == (not remove):
        raise InvalidInputError("url", "give --url URL, or --remove (one of them)")
    request = parse_one(SetWebhookRequest, {"task_id": task_id, "url": url, "rotate_secret": rotate_secret})
    with operations() as ops:
        out.print_json(ops.set_task_webhook(request).model_dump_json())


@task_app.command("queue-references")
@handle_errors
def task_queue_references(
    task_id: str,
    include: list[str] = typer.Option([], "--include", help="a candidate page id to queue (repeatable)"),
    exclude: list[str] = typer.Option([], "--exclude", help="a candidate page id to leave out (repeatable)"),
    limit: int = typer.Option(10, "--limit", help="queue at most this many, most-cited first"),
) -> None:
    """Queue the task's reference candidates (cited papers not read yet; `lyra graph view reference_candidates
    --param task_id=...` lists them) as jobs, read without further citation expansion. `lyra serve` runs them."""
    request = parse_one(
        QueueReferenceCandidatesRequest,
        {"task_id": task_id, "include_ids": include or None, "exclude_ids": exclude, "limit": limit},
    )
    with operations() as ops:
        out.print_json(ops.queue_reference_candidates(request).model_dump_json())


@task_app.command("auth-queue")
@handle_errors
def task_auth_queue(
    task_id: str,
    status: str = typer.Option("pending", "--status", help="pending | resolved | skipped | all"),
    as_json: bool = typer.Option(False, "--json", help="print the same JSON as MCP/REST get_auth_queue"),
) -> None:
    """Pages the task's jobs could not read (CAPTCHA, login or consent wall), waiting for a person. Open each URL
    in your own browser, then `lyra task resolve-auth`. (MCP/REST get_auth_queue.)"""
    request = parse_one(GetAuthQueueRequest, {"task_id": task_id, "status": status})
    with operations() as ops:
        queue = ops.get_auth_queue(request)
    if as_json:
        print(queue.model_dump_json(indent=2))
        return
    table = Table("id", "status", "kind", "domain", "url", "attempts", "job", "cookie")
    for item in queue.items:
        table.add_row(
            item.id,
            item.status,
            item.kind,
            item.domain,
            item.url,
            str(item.attempts),
            item.job_state or "",
            "stored" if item.cookie_stored else "",
        )
    out.print(table)
    paused = ", ".join(queue.paused_domains) or "none"
    out.print(f"pending: {queue.pending}; paused domains: {paused}; jobs held: {queue.held_jobs}", highlight=False)
    out.print(queue.next_step, highlight=False)


@task_app.command("resolve-auth")
@handle_errors
def task_resolve_auth(
    task_id: str,
    intervention_id: str,
    action: str = typer.Option(..., "--action", help="retry | skip | cookie"),
    cookie_file: Path | None = typer.Option(
        None,
        "--cookie-file",
        help="action cookie: a file holding the Cookie header value (else it is read from stdin, hidden on a "
        "terminal); never given on the command line, where other users and the shell history would see it",
    ),
    note: str | None = typer.Option(None, "--note", help="why (a skipped job's error quotes it)"),
    resolver: str = typer.Option("user", "--resolver", help="who resolved it"),
) -> None:
    """Resolve one pending item after dealing with the page in your own browser: retry queues its job again, cookie
    also keeps the Cookie header your browser now sends to that site (secret, for this task and domain), skip ends
    the job as skipped. (MCP/REST resolve_auth.)"""
    fields: dict[str, object] = {
        "task_id": task_id,
        "intervention_id": intervention_id,
        "action": action,
        "note": note,
        "resolver": resolver,
    }
    if action == "cookie":
        if cookie_file is not None:
            try:
                fields["cookie"] = cookie_file.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as exc:
                raise InvalidInputError("--cookie-file", f"cannot be read: {type(exc).__name__}") from None
        elif sys.stdin.isatty():
            fields["cookie"] = typer.prompt("Cookie header value", hide_input=True)
        else:
            fields["cookie"] = sys.stdin.readline().strip()
    request = parse_one(ResolveAuthRequest, fields)
    with operations() as ops:
        out.print_json(ops.resolve_auth(request).model_dump_json())


JSON_PAGE_CLAIMS = 500  # claims per page when `lyra materials --json` streams a task


def _materials(ops: Operations, task_id: str, evidence_limit: int) -> Materials:
    request = parse_one(
        GetMaterialsRequest,
        {"task_id": task_id, "options": {"evidence_limit": evidence_limit}, "limit": MATERIALS_PAGE_MAX},
    )
    return ops.get_materials(request)


@handle_errors
def materials(
    task_id: str,
    as_json: bool = typer.Option(False, "--json", help="print the same JSON as MCP/REST get_materials"),
    evidence_limit: int = typer.Option(
        MaterialsOptions().evidence_limit, "--evidence-limit", help="evidence items per claim in --json"
    ),
) -> None:
    """Every claim of the task with confidence, uncertainty, controversy, alpha, beta, evidence (get_materials)."""
    with operations() as ops:
        if as_json:  # streamed page by page: a large task is never held whole
            request = parse_one(
                GetMaterialsRequest,
                {"task_id": task_id, "options": {"evidence_limit": evidence_limit}, "limit": JSON_PAGE_CLAIMS},
            )
            for chunk in ops.get_materials_json(request):
                sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.write(b"\n")
            sys.stdout.flush()
            return
        result = _materials(ops, task_id, 0)
    out.print(materials_table(result))


@task_app.command("changes")
@handle_errors
def task_changes(
    task_id: str,
    since_run: str | None = typer.Option(None, "--since-run", help="a run id: the changes from that run on"),
    since: str | None = typer.Option(None, "--since", help="an ISO 8601 time with a zone, e.g. 2026-11-01T00:00Z"),
    as_json: bool = typer.Option(False, "--json", help="print the same JSON as MCP/REST get_changes"),
) -> None:
    """What moved each claim since a run or a moment (default: the latest run), and why (get_changes)."""
    request = parse_one(GetChangesRequest, {"task_id": task_id, "since_run": since_run, "since": since})
    with operations() as ops:
        changes = ops.get_changes(request)
    if as_json:
        sys.stdout.write(changes.model_dump_json(indent=1) + "\n")
        return
    out.print(f"[bold]{task_id}[/]: changes since {changes.since or 'the beginning'}; {len(changes.runs)} run(s)")
    if not changes.claims:
        out.print(f"no claim moved ({changes.unchanged} unchanged)")
    for claim in changes.claims:
        before = f"{claim.before.confidence:.3f}" if claim.before else "new" if claim.new_claim else "-"
        crossed = f"  [yellow]{', '.join(claim.crossed)}[/]" if claim.crossed else ""
        out.print(
            f"{escape(claim.text)}: {before} -> {claim.now.confidence:.3f} ({claim.confidence_change:+.3f}){crossed}"
        )
        for cause in claim.causes[:5]:
            what = cause.relation or ""
            if cause.previous_relation:
                what = f"{cause.previous_relation} -> {what}"
            page = cause.page.url if cause.page and cause.page.url else ""
            out.print(f"    {cause.at}  {cause.kind} {what} {cause.judge or ''} {escape(page)}".rstrip())
        if len(claim.causes) > 5:
            out.print(f"    ... {len(claim.causes) - 5} more cause(s): --json lists them")


@task_app.command("timeline")
@handle_errors
def task_timeline(
    task_id: str,
    claim_id: str,
    limit: int = typer.Option(200, "--limit", help="at most this many events"),
    as_json: bool = typer.Option(False, "--json", help="print the same JSON as MCP/REST get_claim_timeline"),
) -> None:
    """Everything that happened to one claim, newest first (get_claim_timeline)."""
    request = parse_one(GetClaimTimelineRequest, {"task_id": task_id, "claim_id": claim_id, "limit": limit})
    with operations() as ops:
        timeline = ops.get_claim_timeline(request)
    if as_json:
        sys.stdout.write(timeline.model_dump_json(indent=1) + "\n")
        return
    out.print(f"[bold]{escape(timeline.text)}[/] ({timeline.total} events)")
    for event in timeline.events:
        detail = ", ".join(f"{k}={v}" for k, v in event.detail.items() if not isinstance(v, dict | list))
        out.print(f"  {event.at}  {event.kind}: {escape(detail)}")


@handle_errors
def export(
    task_id: str,
    fmt: str = typer.Option(..., "--format", "-f", help="csv, csl-json, bibtex, ris or markdown"),
    output: Path | None = typer.Option(None, "--out", "-o", help="write to this file (default: standard output)"),
    no_neutral: bool = typer.Option(False, "--no-neutral", help="leave NEUTRAL evidence out"),
    reveal_flagged: bool = typer.Option(False, "--reveal-flagged", help="include source text the scanner flagged"),
) -> None:
    """Export a task's evidence: CSV for a spreadsheet, CSL-JSON / BibTeX / RIS for a reference manager,
    Markdown to read (export_evidence)."""
    request = parse_one(
        ExportRequest,
        {"task_id": task_id, "format": fmt, "include_neutral": not no_neutral, "reveal_flagged": reveal_flagged},
    )
    with operations() as ops:
        result = ops.export_evidence(request)
    if output is None:
        sys.stdout.write(result.content)
        sys.stdout.flush()
    else:
        output.write_text(result.content, encoding="utf-8")
    note = f" ({result.withheld} flagged source texts withheld)" if result.withheld else ""
    err.print(
        f"exported {result.claims} claims, {result.evidence_items} evidence items, {result.sources} sources as "
        f"{result.format}" + (f" to {output}" if output else "") + note
    )
    if result.evidence_truncated_claims:
        err.print(
            f"[yellow]{len(result.evidence_truncated_claims)} claim(s) have more evidence than one export lists[/]"
        )


@handle_errors
def report(
    task_id: str,
    output: Path = typer.Option(Path("report.html"), "--out", "-o", help="where to write the HTML file"),
    since: str | None = typer.Option(
        None,
        "--since",
        help="the 'What changed' section compares with this moment: a run id (run_..., `lyra task changes` lists "
        "them) or an ISO 8601 time with a zone (2026-11-01T00:00:00Z); default: the task's latest run",
    ),
) -> None:
    """Write a task's evidence report page as one static HTML file."""
    changes: GetChangesRequest | None = None
    if since is not None:
        key = "since_run" if since.startswith("run_") else "since"
        changes = parse_one(GetChangesRequest, {"task_id": task_id, key: since})
    with operations() as ops:
        html = ops.report_html(task_id, changes=changes)
    output.write_text(html, encoding="utf-8")
    out.print(f"wrote {output} ({len(html) // 1024} KiB)")


def _ingest_and_show(ops: Operations, run: Callable[[Callable[[str, int], None]], IngestReport]) -> IngestReport:
    """Run an ingest with progress bars on stderr, then print its summary and the task's materials table."""
    with ingest_progress() as progress:
        report_ = run(progress)
    print_ingest_summary(report_)
    out.print(materials_table(_materials(ops, report_.task_id, 0)))
    return report_


@handle_errors
def ingest(
    paths: list[Path],
    task: str = typer.Option(..., "--task", help="task id (created when missing; its hypothesis is the first --claim)"),
    claim: list[str] = typer.Option(
        [],
        "--claim",
        help="a claim to judge the documents against (repeatable); one the task already holds (same text, ignoring "
        "case, spaces and trailing punctuation) is not added again",
    ),
    extract_claims: bool = typer.Option(False, "--extract-claims", help="let the LLM propose claims too"),
) -> None:
    """Ingest local files and folders into a task and judge its claims. Reads PDF (.pdf, its text layer), HTML
    (.html, .htm), Markdown (.md, .markdown), plain text (.txt) and JSONL abstracts (.jsonl); other files are listed
    as skipped. Folders are read recursively."""
    request = parse_one(
        IngestRequest, {"task_id": task, "paths": paths, "claims": claim, "extract_claims": extract_claims}
    )
    with operations() as ops:
        if request.claims and ops.task_exists(request.task_id):
            print_added_claims(ops.add_claims(AddClaimsRequest(task_id=request.task_id, claims=request.claims)))
        _ingest_and_show(ops, lambda progress: ops.ingest(request, progress))


@handle_errors
def research(
    question: str,
    claim: list[str] = typer.Option(
        [],
        "--claim",
        help="a statement to judge (repeatable); without one, a question is turned into claims by the LLM",
    ),
    corpus: list[Path] = typer.Option([], "--corpus", help="file or folder to read (repeatable)"),
    task: str | None = typer.Option(None, "--task", help="task id (default: derived from the question, as MCP does)"),
    extract_claims: bool = typer.Option(False, "--extract-claims", help="let the LLM propose claims from the corpus"),
    academic: bool | None = typer.Option(
        None,
        "--academic/--no-academic",
        help="search Semantic Scholar and OpenAlex (citation expansion included) for the question; default: "
        "LYRA_ACADEMIC_SEARCH (always)",
    ),
    web: bool = typer.Option(True, "--web/--no-web", help="search the web (LYRA_WEB_SEARCH_ENGINES) for the question"),
    timeout: float = typer.Option(3600.0, "--timeout", help="seconds to wait for the web and academic search"),
) -> None:
    """Research QUESTION: a task (created, or continued), its claims, and their evidence from the local corpus
    (--corpus), the web and the academic literature (one query job: web search, pages fetched above the relevance
    floor; academic search, citation expansion, abstracts judged). A question is never judged itself: its claims are
    the --claim statements or, without them, the claims the LLM states for it; a statement is the first claim.
    Without a network the failing source is named and the task keeps what the other sources gave."""
    request = parse_one(
        ResearchRequest,
        {"question": question, "claims": claim, "corpus": corpus, "task_id": task, "extract_claims": extract_claims},
    )
    with open_services() as services:
        ops = services.operations
        start = ops.start_research(request)
        _print_research_start(start)
        if request.corpus:
            ingest_request = IngestRequest(task_id=start.task_id, paths=request.corpus, extract_claims=extract_claims)
            with ingest_progress() as progress:
                print_ingest_summary(ops.ingest(ingest_request, progress))
        mode: AcademicSearchMode | None = None if academic is None else ("always" if academic else "off")
        if web or mode != "off":
            options = TargetOptions(web_search=web, academic_search=mode)
            targets = [Target(kind="query", value=request.question, options=options)]
            print_job_results(run_jobs(services, start.task_id, targets, timeout))
        else:
            out.print("no query job: --no-web and --no-academic (only the local corpus was read)")
        out.print(materials_table(_materials(ops, start.task_id, 0)))


def _print_research_start(start: ResearchStart) -> None:
    verb = "created" if start.created else "continued"
    if start.question:
        out.print(f"task {start.task_id} {verb}: the question names it and is not judged itself", highlight=False)
    else:
        out.print(f"task {start.task_id} {verb}", highlight=False)
    source = {
        "question": "the statement itself",
        "given": "--claim",
        "llm": "stated by the LLM from the question",
        "existing": "the task's claims so far",
    }[start.claims_from]
    out.print(f"claims judged ({source}):", highlight=False)
    for text in start.claims:
        mark = " (new)" if text in start.claims_added else ""
        out.print(f"  - {text}{mark}", highlight=False, markup=False)


@handle_errors
def demo(
    scholarly: bool = typer.Option(
        False,
        "--scholarly",
        help="the academic flow instead: a DOI job against a local server answering like Semantic Scholar and "
        "OpenAlex (bundled fictional papers): search, citation expansion, CITES edges, reference candidates",
    ),
) -> None:
    """The main job: managed Neo4j + offline models + the bundled corpus -> evidence graph and materials."""
    from lyra.cli.server import start_managed_if_needed

    settings = settings_from_env()
    start_managed_if_needed()
    if scholarly:
        _scholarly_demo(settings)
        return
    corpus = settings.paths.examples_dir / "corpus"
    questions = json.loads((corpus / "questions.json").read_text(encoding="utf-8"))
    with operations(settings) as ops:
        if ops.task_exists(DEMO_TASK):  # pages and fragments stay; claims, edges and jobs are rebuilt
            ops.stop_task(StopTaskRequest(task_id=DEMO_TASK, mode="immediate", cleanup="soft"))
        config = TaskConfig(task_id=DEMO_TASK, hypothesis_as_claim=False, claims=[q["claim"] for q in questions])
        ops.create_task(
            CreateTaskRequest(hypothesis="Demo: three research questions on a synthetic corpus", config=config)
        )
        report_ = _ingest_and_show(ops, lambda p: ops.ingest(IngestRequest(task_id=DEMO_TASK, paths=[corpus]), p))
        browser = ops.connection.browser_url
    if browser:
        out.print(f"\nNeo4j Browser: {browser}  (user neo4j; password: `lyra neo4j env`)")
    out.print("Paste this query to see the demo task's evidence:")
    out.print(
        f"  MATCH (t:Task {{id: '{DEMO_TASK}'}})-[:HAS_CLAIM]->(c:Claim)<-[r]-(f:Fragment)"
        "-[:EXTRACTED_FROM]->(p:Page)-[:IN_DOMAIN]->(d:Domain) RETURN *",
        highlight=False,
        markup=False,
    )
    if not report_.edges:
        err.print("[yellow]no stance edge was written; see the skipped items above[/]")


def _scholarly_demo(settings: Settings) -> None:
    from lyra.services.demo import (
        SCHOLARLY_DEMO_DOI,
        SCHOLARLY_DEMO_HYPOTHESIS,
        SCHOLARLY_DEMO_TASK,
        local_scholarly_apis,
    )

    corpus = settings.paths.examples_dir / "scholarly" / "corpus.json"
    with local_scholarly_apis(corpus) as overrides:
        out.print(f"local Semantic Scholar / OpenAlex answering from {corpus} at {overrides['s2_url']}")
        cache = settings.paths.state_dir / "cache" / "demo_scholarly.sqlite"
        # 12 papers only: Stage 2 keeps 5 (not 10) so the cut, and the reference candidates it leaves, show
        api_settings = settings.model_copy(
            update={**overrides, "scholarly_cache_path": cache, "citation_stage2_top_k": 5}
        )
        with open_services(api_settings) as services:
            ops = services.operations
            if ops.task_exists(SCHOLARLY_DEMO_TASK):  # pages stay; claims, edges and jobs are rebuilt
                ops.stop_task(StopTaskRequest(task_id=SCHOLARLY_DEMO_TASK, mode="immediate", cleanup="soft"))
            ops.create_task(
                CreateTaskRequest(hypothesis=SCHOLARLY_DEMO_HYPOTHESIS, config=TaskConfig(task_id=SCHOLARLY_DEMO_TASK))
            )
            target = Target(kind="doi", value=SCHOLARLY_DEMO_DOI)
            print_job_results(run_jobs(services, SCHOLARLY_DEMO_TASK, [target], timeout=1800))
            view = ops.query_view(
                QueryViewRequest(name="reference_candidates", params={"task_id": SCHOLARLY_DEMO_TASK})
            )
            out.print(f"reference candidates (cited, not read yet): {view.row_count}")
            for row in view.rows[:5]:
                out.print(f"  - {row['title']} ({row['year']}), doi {row['doi']}", highlight=False, markup=False)
            out.print("  queue them: lyra task queue-references demo_scholarly --limit 3 (then lyra serve runs them)")
            out.print(materials_table(_materials(ops, SCHOLARLY_DEMO_TASK, 0)))
            browser = ops.connection.browser_url
    if browser:
        out.print(f"\nNeo4j Browser: {browser}  (user neo4j; password: `lyra neo4j env`)")
    out.print("Paste this query to see the papers and who cites whom:")
    out.print(
        "  MATCH (a:Page)-[c:CITES]->(b:Page) WHERE a.page_type = 'academic_abstract' RETURN a, c, b",
        highlight=False,
        markup=False,
    )
