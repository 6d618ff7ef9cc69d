"""What every command group shares: consoles, settings, the error mapping, the wired services, small printers."""

from __future__ import annotations

import functools
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from lyra.core.context import current_door
from lyra.core.errors import ConfigError, LyraError

if TYPE_CHECKING:  # imported where used: `lyra --help` stays fast (tests/unit/cli/test_cli_startup.py)
    from pydantic import ValidationError

    from lyra.bootstrap import Services
    from lyra.core.settings import ExperimentSettings, Settings
    from lyra.models.api import JobInfo, Materials, Target
    from lyra.models.ingest import IngestReport
    from lyra.services.operations import Operations

P = ParamSpec("P")
R = TypeVar("R")

out = Console(width=None if sys.stdout.isatty() else 150)
err = Console(stderr=True)
InstanceOption = typer.Option(
    None,
    "--instance",
    help="managed instance, any name of a-z, 0-9, _ and - (up to 32, a letter first): default (7687/7474), "
    "test (7688/7475), test2..test6 and scratch keep fixed ports; another name gets a free pair once "
    "(LYRA_NEO4J_BOLT_PORT / _HTTP_PORT to choose)",
)


def settings_from_env(**overrides: Any) -> Settings:
    """Settings from the environment (plus overrides), logging configured; a bad value is a ConfigError."""
    from pydantic import ValidationError

    from lyra.core.logging import configure_logging
    from lyra.core.settings import load_settings

    try:
        settings = load_settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        raise setting_error(exc) from None
    configure_logging(settings.log_level)
    return settings


def experiment_from_env(**overrides: Any) -> ExperimentSettings:
    """The experiment switches (`lyra eval`, `lyra bench`) from the environment plus overrides; a bad value is a
    ConfigError."""
    from pydantic import ValidationError

    from lyra.core.settings import load_experiment_settings

    try:
        return load_experiment_settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        raise setting_error(exc) from None


def setting_error(exc: ValidationError) -> ConfigError:
    """The first error of a settings validation, naming the setting and the variable to check."""
    from lyra.core.settings import env_variable
    from lyra.models.validation import error_message

    first = exc.errors()[0]
    loc = tuple(first.get("loc", ()))
    variable = env_variable(loc)  # LYRA_<FIELD>; NEO4J_URI, OLLAMA_HOST: their own names
    field = str(loc[-1]) if loc else "settings"
    name = field if variable.startswith("LYRA_") or " " in variable else variable
    return ConfigError(
        f"setting {name}: {error_message(first.get('msg', 'invalid'))}", hint=f"check {variable} in the environment"
    )


def handle_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Print LyraErrors as one clear message (plus hint) on stderr and exit with status 2."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except LyraError as exc:
            # one line each, however narrow the terminal (soft_wrap: no line breaks inserted)
            err.print(
                f"[bold red]error[/] ({exc.code}): {escape(exc.message)}", markup=True, highlight=False, soft_wrap=True
            )
            if exc.hint:
                err.print(f"[yellow]hint[/]: {escape(exc.hint)}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper


@contextmanager
def open_services(settings: Settings | None = None) -> Iterator[Services]:
    """The wired services for one command, closed (driver, caches) however the command ends."""
    from lyra.bootstrap import build_services

    services = build_services(settings or settings_from_env())
    try:
        yield services
    finally:
        services.close()


@contextmanager
def operations(settings: Settings | None = None) -> Iterator[Operations]:
    """The application layer for one command (what MCP and REST call too); the records it writes name the door."""
    door = current_door.set("cli")
    try:
        with open_services(settings) as services:
            yield services.operations
    finally:
        current_door.reset(door)


def parse_params(pairs: list[str]) -> dict[str, Any]:
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


def materials_table(materials: Materials) -> Table:
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
    for c in materials.claims:
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


# Log records a command's own summary prints again, as (logger, message template): while the summary's material is
# gathered they are held back, so each skipped item and each job's end is printed once (in the summary, on stdout).
SHOWN_IN_SUMMARY = frozenset(
    {
        ("lyra.services.ingest", "skipped %s: %s"),  # "skipped N:" (print_ingest_summary, print_job_results)
        ("lyra.services.jobs", "job %s %s%s"),  # how a job ended (print_job_results)
        ("lyra.services.jobs", "job %s %s: %s"),  # a job waiting for a person (print_job_results)
    }
)


def _not_shown_in_summary(record: logging.LogRecord) -> bool:
    return (record.name, record.msg) not in SHOWN_IN_SUMMARY


@contextmanager
def shown_in_summary() -> Iterator[None]:
    """Hold back the log records (:data:`SHOWN_IN_SUMMARY`) that the summary printed after this block repeats."""
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(_not_shown_in_summary)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(_not_shown_in_summary)


@contextmanager
def ingest_progress() -> Iterator[Callable[[str, int], None]]:
    """Progress bars on stderr for documents / fragments / pairs / edges; yields the callback ingest calls. The
    skipped items are not logged meanwhile: the summary lists them (print_ingest_summary)."""
    with (
        shown_in_summary(),
        Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}"),
            TimeElapsedColumn(),
            console=err,
            transient=False,
        ) as bar,
    ):
        counters = {name: bar.add_task(name, total=None) for name in ("documents", "fragments", "pairs", "edges")}
        yield lambda name, n: bar.advance(counters[name], n)


def print_ingest_summary(report: IngestReport) -> None:
    out.print(
        f"[bold]{report.task_id}[/]: {report.documents} documents -> {report.pages_new} new pages "
        f"({report.pages_existing} known), {report.fragments_new} new fragments ({report.fragments_existing} known, "
        f"{report.fragments_near_duplicate} near-duplicates linked), {report.pairs_judged} pairs judged "
        f"({report.pairs_from_cache} from cache), edges {report.edges or '{}'}"
        + (f" ({report.edges_existing} already present)" if report.edges_existing else "")
    )
    out.print(
        f"candidate pairs (the task's claims against its passages): {report.pairs_ranked} at or above the relevance "
        f"floor ({report.pairs_judged} judged now, {report.edges_existing} judged before, {report.pairs_pending} "
        f"pending), {report.pairs_below_floor} below it, {report.pairs_own_source} left out as a claim's own source"
    )
    if report.pairs_pending:
        out.print(
            f"[yellow]{report.pairs_pending} candidate pair(s) were not judged[/] (pair budget left: "
            f"{report.pair_budget_left}); `lyra task judge-remaining {report.task_id}` judges them "
            "(raise LYRA_TASK_PAIR_BUDGET first if the budget is used up)"
        )
    moved = report.passages
    if moved.any:  # documents read before whose text changed (decision record 0016)
        out.print(
            f"known documents read again: {moved.superseded} passage(s) no longer in them "
            f"({moved.edges_superseded} edge(s) stopped counting), {moved.restored} back "
            f"({moved.edges_restored} edge(s) count again)"
        )
    if report.extracted_claims:
        out.print("claims extracted by the LLM: " + "; ".join(report.extracted_claims))
    if report.skipped:
        out.print(f"[yellow]skipped {len(report.skipped)}[/]:")
        for item in report.skipped:
            out.print(f"  - {item.item}: {item.reason}", highlight=False, markup=False)
    share = report.seconds_in_models / report.seconds_total if report.seconds_total else 0.0
    out.print(f"took {report.seconds_total:.1f} s ({share:.0%} inside the models)")


def run_jobs(services: Services, task_id: str, targets: list[Target], timeout: float) -> list[JobInfo]:
    """Queue ``targets`` for the task and run them here, in this process's workers, until none is left (or
    ``timeout`` seconds); a spinner on stderr shows the jobs. Returns the targets' jobs with their results."""
    from lyra.models.api import GetStatusRequest, QueueTargetsRequest

    ops = services.operations
    queued = ops.queue_targets(QueueTargetsRequest(task_id=task_id, targets=targets))
    ids = {j.job_id for j in queued.jobs}
    for job in queued.jobs:
        if job.duplicate:
            err.print(f"{job.kind} {job.value!r}: already {job.state} for this task (not run again)")
    deadline = time.monotonic() + timeout
    with services.running_workers(), shown_in_summary(), err.status("running jobs") as spinner:
        while True:
            status = ops.get_status(GetStatusRequest(task_id=task_id, wait=5, detail="full"))
            mine = [j for j in status.job_list or [] if j.id in ids]
            active = [j for j in mine if j.state in ("queued", "running")]
            spinner.update(
                f"jobs: {len(mine) - len(active)}/{len(mine)} finished; pages {status.metrics.pages}, "
                f"edges {sum(status.metrics.edges.values())}"
            )
            if not active:
                return mine
            if time.monotonic() > deadline:
                err.print(f"[yellow]stopped waiting after {timeout:.0f} s; the jobs stay queued for `lyra serve`[/]")
                return mine


def print_job_results(jobs: list[JobInfo]) -> None:
    """One block per job: what it read, what the web search and the academic flow did, warnings, or why it failed."""
    for job in jobs:
        if job.state == "failed":
            out.print(f"[red]{job.kind} {job.value!r} failed[/]: {escape(job.error or '')}")
            out.print("  going on with what the task has from its other sources")
            continue
        if job.state == "waiting":
            out.print(f"[yellow]{job.kind} {job.value!r} waits for a person[/]: {escape(job.error or '')}")
            out.print("  see `lyra task auth-queue TASK_ID`, then `lyra task resolve-auth`")
            continue
        result = job.result or {}
        out.print(
            f"[bold]{job.kind} {job.value!r}[/] {job.state}: {result.get('documents', 0)} documents read, "
            f"edges {result.get('edges') or '{}'}"
        )
        skipped = [s for s in result.get("skipped") or [] if isinstance(s, dict)]
        total = result.get("skipped_total")
        total = total if isinstance(total, int) else len(skipped)
        if total:
            listed = f" (the first {len(skipped)})" if total > len(skipped) else ""
            out.print(f"  [yellow]skipped {total}[/]{listed}:")
            for item in skipped:
                out.print(f"    - {item.get('item')}: {item.get('reason')}", highlight=False, markup=False)
        web = result.get("web")
        if isinstance(web, dict):
            fates = web.get("fates") or {}
            out.print(
                f"  web search: engine {web.get('engine') or 'none'}, {web.get('results', 0)} results; candidates: "
                + (", ".join(f"{k} {v}" for k, v in fates.items()) or "none"),
                highlight=False,
            )
            below = [c for c in web.get("candidates") or [] if c.get("fate") == "below_floor"]
            if below:
                out.print(
                    f"  {len(below)} result(s) below the relevance floor {web.get('relevance_floor')}, not fetched: "
                    + "; ".join(f"{c.get('title') or c.get('url')} ({c.get('relevance')})" for c in below[:5])
                    + ("; ..." if len(below) > 5 else ""),
                    highlight=False,
                    markup=False,
                )
            for warning in web.get("warnings") or []:
                out.print(f"  [yellow]warning[/]: {escape(str(warning))}")
        academic = result.get("academic")
        if isinstance(academic, dict) and academic.get("searched") is False:
            out.print(f"  academic search skipped: {escape(str(academic.get('reason') or ''))}")
        elif isinstance(academic, dict):
            stages = academic.get("stages") or {}
            out.print(
                f"  seeds {len(academic.get('seeds') or [])}; citation expansion: "
                + ", ".join(f"{k} {v}" for k, v in stages.items())
                + f"; papers seen {academic.get('papers_seen', 0)}, CITES {academic.get('citations', 0)}"
            )
            for name, counters in (academic.get("api") or {}).items():
                out.print(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in counters.items()), highlight=False)
            for warning in academic.get("warnings") or []:
                out.print(f"  [yellow]warning[/]: {escape(str(warning))}")
