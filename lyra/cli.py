"""`lyra` command line. The only module that configures logging (to stderr); results go to stdout."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
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


# --------------------------------------------------------------------------- tasks
def _services(instance: str | None = None) -> Any:
    from lyra.bootstrap import build_services

    return build_services(_settings(instance))


@task_app.command("create")
@handle_errors
def task_create(task_id: str, hypothesis: str) -> None:
    """Create a task; its hypothesis becomes its first claim."""
    services = _services()
    try:
        out.print_json(data=services.tasks.create_task(task_id, hypothesis))
    finally:
        services.close()


@task_app.command("list")
@handle_errors
def task_list() -> None:
    """List tasks with their claim counts."""
    services = _services()
    try:
        table = Table("id", "status", "claims", "created_at", "hypothesis")
        for t in services.tasks.list_tasks():
            table.add_row(t["id"], t["status"], str(t["claims"]), str(t["created_at"]), t["hypothesis"])
        out.print(table)
    finally:
        services.close()


@task_app.command("cleanup")
@handle_errors
def task_cleanup(
    task_id: str,
    mode: str = typer.Option("soft", "--mode", help="soft: the task's claims and edges; hard: also orphans"),
) -> None:
    """Clean up a task (ADR-0005): soft removes the task's claims and stance edges; hard also orphans."""
    if mode not in ("soft", "hard"):
        raise typer.BadParameter("must be 'soft' or 'hard'", param_hint="--mode")
    services = _services()
    try:
        report = services.cleanup.cleanup(task_id, "soft" if mode == "soft" else "hard")
        out.print_json(report.model_dump_json())
    finally:
        services.close()


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
    services = _services()
    try:
        rows = services.materials.claim_confidences(task_id)
        if as_json:
            print(json.dumps({"task_id": task_id, "claims": [r.model_dump() for r in rows]}, indent=2))
        else:
            out.print(_materials_table(rows))
    finally:
        services.close()


# ---------------------------------------------------------------------------- graph
@graph_app.command("load")
@handle_errors
def graph_load(path: Path) -> None:
    """Load an evidence graph described in JSON (format: lyra/services/graph_import.py)."""
    from lyra.services.graph_import import load_graph_file

    services = _services()
    try:
        report = load_graph_file(path, services.tasks, services.evidence)
        out.print_json(report.model_dump_json())
    finally:
        services.close()


# ----------------------------------------------------------------------------- demo
@app.command("demo")
@handle_errors
def demo() -> None:
    """Start the managed Neo4j, load the example graph, print its materials and a Browser query."""
    from lyra.bootstrap import build_services
    from lyra.graph.server import LocalNeo4j
    from lyra.services.graph_import import load_graph_file

    settings = _settings()
    if not settings.neo4j_uri:
        err.print("starting the managed Neo4j (the first run fetches ~150 MB of jars) ...")
        LocalNeo4j(settings).start()
    services = build_services(settings)
    try:
        path = settings.config_dir / "examples" / "example_graph.json"
        task_id = json.loads(path.read_text(encoding="utf-8"))["task"]["id"]
        if services.tasks.tasks.exists(task_id):
            services.cleanup.cleanup(task_id, "hard")
        report = load_graph_file(path, services.tasks, services.evidence)
        out.print(
            f"loaded task [bold]{report.task_id}[/]: {report.claims} claims, {report.pages} pages, "
            f"{report.fragments} fragments, {report.edges} stance edges, {report.citations} citations"
        )
        out.print(_materials_table(services.materials.claim_confidences(task_id)))
        if services.connection.browser_url:
            out.print(f"\nNeo4j Browser: {services.connection.browser_url}  (user neo4j; `lyra neo4j env`)")
        out.print("Paste this query to see the task's subgraph:")
        out.print(
            f"  MATCH (t:Task {{id: '{task_id}'}})-[:HAS_CLAIM]->(c:Claim)<-[r]-(f:Fragment)"
            "-[:EXTRACTED_FROM]->(p:Page)-[:IN_DOMAIN]->(d:Domain) RETURN *",
            highlight=False,
            markup=False,
        )
    finally:
        services.close()


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

    services = _services()
    try:
        result = run_confidence_bench(services, claims, edges_per_claim, runs=runs, keep=keep)
    finally:
        services.close()
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


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
