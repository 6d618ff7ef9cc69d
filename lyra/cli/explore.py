"""Exploring and maintaining the graph: `lyra graph ...` and `lyra search`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from lyra.cli.common import handle_errors, operations, out, parse_params, settings_from_env
from lyra.models.api import (
    CollectGarbageRequest,
    QueryGraphRequest,
    QueryViewRequest,
    RescoreRequest,
    VectorSearchRequest,
)
from lyra.models.validation import parse_one

graph_app = typer.Typer(help="Load, inspect and maintain evidence graphs.", no_args_is_help=True)


@graph_app.command("views")
@handle_errors
def graph_views() -> None:
    """List the named read-only views (cypher/views/)."""
    with operations() as ops:
        table = Table("view", "parameters", "description")
        for view in ops.list_views().views:
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
    params = parse_params(param)
    if task:
        params["task_id"] = task
    request = parse_one(QueryViewRequest, {"name": name, "params": params})
    with operations() as ops:
        print(ops.query_view(request).model_dump_json(indent=2))


@graph_app.command("query")
@handle_errors
def graph_query(
    cypher: str,
    param: list[str] = typer.Option([], "--param", help="name=value (repeatable)"),
    limit: int = typer.Option(100, "--limit", min=1, max=1000),
) -> None:
    """Ad-hoc READ-ONLY Cypher (the MCP/REST query_graph: refused unless read-only; timeout, row limit)."""
    request = parse_one(
        QueryGraphRequest, {"cypher": cypher, "params": parse_params(param), "options": {"row_limit": limit}}
    )
    with operations() as ops:
        print(ops.query_graph(request).model_dump_json(indent=2))


@graph_app.command("load")
@handle_errors
def graph_load(
    path: Path,
    bulk: bool = typer.Option(
        False,
        "--bulk",
        help="first big load into an EMPTY managed instance with Neo4j's offline importer: the instance is stopped, "
        "imported into and started again (lyra/services/bulk_import.py)",
    ),
) -> None:
    """Load an evidence graph described in JSON (format: lyra/services/graph_import.py)."""
    if bulk:
        from lyra.services.bulk_import import bulk_load_graph_file

        out.print_json(bulk_load_graph_file(path, settings_from_env()).model_dump_json())
        return
    with operations() as ops:
        out.print_json(ops.load_graph(path).model_dump_json())


@graph_app.command("gc")
@handle_errors
def graph_gc(
    apply: bool = typer.Option(False, "--apply", help="remove the garbage (default: only count it)"),
) -> None:
    """Sweep what soft clean-ups leave: claims and jobs no task holds, fragments no task's claim uses on pages no
    task uses, citations and pages left empty. Counts first; removes only with --apply (never while jobs run)."""
    with operations() as ops:
        out.print_json(ops.collect_garbage(CollectGarbageRequest(dry_run=not apply, confirm=apply)).model_dump_json())


@graph_app.command("rescore")
@handle_errors
def graph_rescore(
    task: str | None = typer.Option(None, "--task", help="only this task's claims (default: every claim)"),
    check: bool = typer.Option(False, "--check", help="only report claims whose stored sums differ; write nothing"),
    limit: int = typer.Option(20, "--limit", min=0, max=1000, help="differing claims listed at most (--check)"),
) -> None:
    """Recompute each claim's stored evidence sums (alpha/beta weights and counts) from its stance edges and store
    them: needed after stance edges of a Lyra-written claim were changed by hand. --check only compares, and exits
    with status 1 when a claim's stored sums differ."""
    request = parse_one(RescoreRequest, {"task_id": task, "check": check, "limit": limit})
    with operations() as ops:
        report = ops.rescore_claims(request)
    out.print_json(report.model_dump_json())
    if check and report.differing:
        raise typer.Exit(1)


@handle_errors
def search(
    text: str,
    task: str | None = typer.Option(None, "--task", help="only fragments this task's claims reach"),
    k: int = typer.Option(10, "-k", min=1, max=100),
) -> None:
    """Fragments most similar to TEXT (FAISS, cosine on normalised embeddings)."""
    request = parse_one(VectorSearchRequest, {"query": text, "task_id": task, "k": k, "kind": "fragments"})
    with operations() as ops:
        hits = ops.vector_search(request).hits
    table = Table("score", "fragment", "snippet", "source")
    for hit in hits:
        snippet = hit.snippet.text[:120] if hit.snippet.text is not None else "(withheld: the scanner flagged it)"
        table.add_row(f"{hit.score:.3f}", hit.id, snippet, hit.url or "")
    out.print(table)
