"""`lyra` command line, one module per command group. The only place that configures logging (to stderr);
results go to stdout. Every user-facing command calls :class:`~lyra.services.operations.Operations`, the layer
MCP and REST call too."""

from __future__ import annotations

import typer

from lyra.cli import explore, server, tasks, trust
from lyra.cli.bench import bench_app
from lyra.cli.evaluate import eval_app
from lyra.cli.judging import judge_app
from lyra.cli.learn import learn_app
from lyra.cli.train import train_app

app = typer.Typer(help="Lyra: an evidence graph for AI-assisted research, stored in Neo4j.", no_args_is_help=True)
app.add_typer(server.neo4j_app, name="neo4j")
app.add_typer(server.models_app, name="models")
app.add_typer(tasks.task_app, name="task")
app.add_typer(explore.graph_app, name="graph")
app.add_typer(eval_app, name="eval")
app.add_typer(bench_app, name="bench")
app.add_typer(train_app, name="train")
app.add_typer(learn_app, name="learn")
app.add_typer(judge_app, name="judge")

app.command("demo")(tasks.demo)
app.command("ingest")(tasks.ingest)
app.command("research")(tasks.research)
app.command("materials")(tasks.materials)
app.command("report")(tasks.report)
app.command("export")(tasks.export)
app.command("search")(explore.search)
app.command("feedback")(trust.feedback)
app.command("check-domain")(trust.check_domain)
app.command("calibration")(trust.calibration)
app.command("serve")(server.serve)
app.command("mcp")(server.mcp_stdio)


def main() -> None:  # pragma: no cover - console entry point
    app()


__all__ = ["app", "main"]
