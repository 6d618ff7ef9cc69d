"""Issue 14's table, measured side by side in one run against our SQLite reconstruction of the original system's SQL
path (benchmarks/scale_sqlite.py), on the same generated graph (benchmarks/scale_data.py). A comparison with
another system, so it lives beside Lyra, not in it: run it from a checkout with
``python -m benchmarks.scale [--claims N --edges E --cites C --rounds R --serve --bulk --floor --json]``.

Per round: the graph is loaded into Lyra through the real write path (the EvidenceRepository / TaskService methods
ingest uses, step by step) and into a fresh SQLite file; then score-all (every claim's alpha, beta, confidence),
materials with 10 evidence items per claim and with every item are timed on both. Medians over the rounds are
reported (reads are warm: one untimed call first). After the rounds: ``lyra materials --json`` as a whole process
(start-up, query, JSON to stdout) and peak memory. Every claim's numbers are checked against the generator's ground
truth on both paths; a mismatch fails the run.

The synthetic data lives under its own task id (``bench_scale_<run>``) and URL prefix
(``https://scale-bench.invalid/<run>/``); clean-up removes exactly those (and the synthetic Domain nodes once no
page uses them), so other data in the database is never touched.
"""

from __future__ import annotations

import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import typer
from pydantic import BaseModel
from rich.table import Table

from benchmarks.scale_data import DOMAIN_SUFFIX, ScaleData, generate
from benchmarks.scale_sqlite import SqliteReference
from benchmarks.write_floor import FloorStep, measure_write_floor
from lyra.bench.api import _free_port, _serve, latency
from lyra.bootstrap import Services
from lyra.cli.common import handle_errors, open_services, out, settings_from_env
from lyra.core.errors import InvalidInputError
from lyra.models.api import MATERIALS_PAGE_MAX, GetMaterialsRequest, Materials, MaterialsOptions

# the scale work's table: the original's SQL path and Lyra before this work, seconds (10k/100k/20k and 50k/500k/100k)
ISSUE_TABLE: dict[str, dict[str, float]] = {
    "10000/100000/20000": {"ingest": 3.5, "score_all": 0.29, "materials": 1.6},
    "50000/500000/100000": {"ingest": 21.8, "score_all": 2.5, "materials": 11.9},
}
ISSUE_LYRA_BEFORE: dict[str, dict[str, str]] = {
    "10000/100000/20000": {"ingest": "15.7", "score_all": "0.48", "materials": "2.5-3.0"},
    "50000/500000/100000": {"ingest": "88", "score_all": "2.0", "materials": "14.5-17.1"},
}
TARGET_RATIO = {"ingest": 1.0, "score_all": 0.5, "materials": 0.8}
STEPS = ("pages", "fragments", "claims", "stance_edges", "citations")
TOLERANCE = 1e-9
READS_PER_ROUND = 3  # timed calls of each read per round and side (after one warm-up), SQLite and Lyra in turn
CHECKED_FIELDS = {"claim_id", "alpha", "beta", "confidence", "supports_count", "refutes_count", "neutral_count"}
SERVE_RSS_LIMIT_MB = 1024.0


class Measure(BaseModel):
    name: str
    lyra_seconds: float
    sqlite_seconds: float | None
    ratio: float | None  # Lyra / SQLite
    target_ratio: float | None = None
    issue_sqlite_seconds: float | None = None
    issue_lyra_before: str | None = None


class ServeMemory(BaseModel):
    """`lyra serve` in its own process while a client pages through every claim's materials over REST."""

    page_claims: int
    pages: int
    claims: int
    seconds: float
    page_p50_ms: float
    page_p95_ms: float
    idle_rss_mb: float
    peak_rss_mb: float
    limit_mb: float = SERVE_RSS_LIMIT_MB


class BulkMeasure(BaseModel):
    """`lyra graph load --bulk` (offline importer) of the same graph into the then empty managed instance."""

    seconds_total: float
    seconds_files: float
    seconds_import: float
    seconds_restart: float
    seconds_schema: float
    sqlite_ingest_seconds: float
    ratio: float
    max_abs_error: float
    skipped: str | None = None


class ScaleBenchResult(BaseModel):
    claims: int
    edges: int
    cites: int
    fragments: int
    pages: int
    rounds: int
    seed: int
    measures: list[Measure]
    ingest_steps: dict[str, float]  # Lyra, median seconds per step
    sqlite_ingest_steps: dict[str, float]
    materials_cli_seconds: float
    materials_cli_peak_rss_mb: float
    materials_cli_bytes: int
    bench_peak_rss_mb: float
    max_abs_error_lyra: float
    max_abs_error_sqlite: float
    claims_checked: int
    load_average: tuple[float, float, float]
    load_average_end: tuple[float, float, float]
    serve: ServeMemory | None = None
    bulk: BulkMeasure | None = None
    floor: list[FloorStep] | None = None


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def load_into_lyra(services: Services, data: ScaleData, task_id: str) -> tuple[dict[str, float], list[str], list[str]]:
    """The real write path, step by step (what ingest and `lyra graph import` call); seconds per step, the page ids
    and the claim ids in generator order."""
    seconds: dict[str, float] = {}
    services.tasks.create_task(task_id, f"scale benchmark {data.run}", hypothesis_as_claim=False)

    def pages() -> list[str]:
        rows = [
            {"url": url, "domain": data.page_domains[i], "year": data.page_years[i]}
            for i, url in enumerate(data.page_urls)
        ]
        ids = services.evidence.upsert_pages(rows).ids
        services.evidence.record_task_reads(task_id, ids, "scale_benchmark")  # as ingest does: the task read them
        return ids

    seconds["pages"], page_ids = _timed(pages)

    def fragments() -> list[str]:
        rows = [
            {"page_id": page_ids[data.fragment_page[i]], "text": text, "position": i}
            for i, text in enumerate(data.fragment_texts)
        ]
        return services.evidence.upsert_fragments(rows).ids

    seconds["fragments"], fragment_ids = _timed(fragments)
    seconds["claims"], claim_ids = _timed(lambda: services.tasks.add_claims(task_id, data.claim_texts))

    def stance_edges() -> None:
        rows = [
            {
                "fragment_id": fragment_ids[f],
                "claim_id": claim_ids[c],
                "relation": r,
                "nli_confidence": w,
                "source_domain_category": "unverified",
            }
            for f, c, r, w in zip(
                data.edge_fragment, data.edge_claim, data.edge_relation, data.edge_confidence, strict=True
            )
        ]
        services.evidence.create_stance_edges(rows)

    seconds["stance_edges"], _ = _timed(stance_edges)

    def citations() -> None:
        rows = [
            {"citing_page_id": page_ids[a], "cited_page_id": page_ids[b], "citation_source": "openalex"}
            for a, b in zip(data.cite_citing, data.cite_cited, strict=True)
        ]
        services.evidence.merge_citations(rows)

    seconds["citations"], _ = _timed(citations)
    return seconds, page_ids, claim_ids


def clean_lyra(services: Services, data: ScaleData, task_id: str) -> None:
    """Remove exactly this run's data: its task (claims, stance edges), its pages with their fragments and CITES,
    and synthetic Domain nodes no page uses any more."""
    if services.task_repo.exists(task_id):
        services.cleanup.cleanup(task_id, "soft")
    batch = services.settings.graph.cleanup_batch_size
    services.store.run("cleanup/delete_pages_by_url_prefix", {"prefix": data.url_prefix, "batch_size": batch})
    services.store.run("cleanup/delete_unused_domains_by_suffix", {"suffix": DOMAIN_SUFFIX})


def lyra_materials(services: Services, task_id: str, evidence_limit: int) -> Materials:
    request = GetMaterialsRequest(
        task_id=task_id, options=MaterialsOptions(evidence_limit=evidence_limit), limit=MATERIALS_PAGE_MAX
    )
    return services.operations.get_materials(request)


def check_lyra(claims: list[dict[str, Any]], data: ScaleData, claim_ids: list[str], what: str) -> float:
    """Max |error| of alpha, beta, confidence over every claim against the ground truth; counts must be equal."""
    index = {cid: i for i, cid in enumerate(claim_ids)}
    if len(claims) != len(claim_ids):
        raise AssertionError(f"{what} lists {len(claims)} claims, the generator made {len(claim_ids)}")
    worst = 0.0
    for claim in claims:
        i = index[claim["claim_id"]]
        a, b = data.alpha[i], data.beta[i]
        if (claim["supports_count"], claim["refutes_count"], claim["neutral_count"]) != data.counts[i]:
            raise AssertionError(f"{what}, claim {claim['claim_id']}: counts differ from the ground truth")
        worst = max(worst, abs(claim["alpha"] - a), abs(claim["beta"] - b), abs(claim["confidence"] - a / (a + b)))
    if worst > TOLERANCE:
        raise AssertionError(f"{what}: alpha/beta/confidence differ from the ground truth by {worst:.3g}")
    return worst


def check_sqlite(scores: list[tuple[str, float, float, float]], data: ScaleData, claim_ids: list[str]) -> float:
    index = {cid: i for i, cid in enumerate(claim_ids)}
    if len(scores) != len(claim_ids):
        raise AssertionError(f"SQLite scores {len(scores)} claims, the generator made {len(claim_ids)}")
    worst = 0.0
    for cid, alpha, beta, confidence in scores:
        i = index[cid]
        a, b = data.alpha[i], data.beta[i]
        worst = max(worst, abs(alpha - a), abs(beta - b), abs(confidence - a / (a + b)))
    if worst > TOLERANCE:
        raise AssertionError(f"SQLite's alpha/beta/confidence differ from the ground truth by {worst:.3g}")
    return worst


def _status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def materials_cli(task_id: str, evidence_limit: int = 10) -> tuple[float, float, int]:
    """`lyra materials <task> --json` as its own process: (wall seconds, peak RSS MB, bytes printed).

    The peak is the process's own high-water mark (VmHWM in /proc, polled until it exits): the child's
    ``ru_maxrss`` would also count the benchmark's memory it was forked from."""
    with tempfile.TemporaryFile() as sink:
        start = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "lyra", "materials", task_id, "--json", "--evidence-limit", str(evidence_limit)],
            stdout=sink,
            stderr=subprocess.DEVNULL,
            env=os.environ.copy(),
        )
        peak = 0.0
        while process.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                peak = max(peak, _status_mb(process.pid, "VmHWM"))
            time.sleep(0.01)
        seconds = time.perf_counter() - start
        if process.returncode != 0:
            raise RuntimeError(f"lyra materials exited with {process.returncode}")
        size = sink.tell()
    return seconds, peak, size


def _rss_mb(pid: int) -> float:
    return _status_mb(pid, "VmRSS")


def serve_memory(services: Services, task_id: str, expected_claims: int, page_claims: int = 500) -> ServeMemory:
    """Start `lyra serve --no-workers`, page through the task's materials over REST (``limit`` + ``cursor``, 10
    evidence items per claim) while sampling the server's RSS from /proc every 20 ms; the peak is the answer."""
    port = _free_port()
    log = services.settings.paths.state_dir / "bench_scale_serve.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    process = _serve(port, log)
    peak = idle = _rss_mb(process.pid)
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            with contextlib.suppress(OSError, ValueError):
                peak = max(peak, _rss_mb(process.pid))
            stop.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    url = f"http://127.0.0.1:{port}/api/v1/tasks/{task_id}/materials"
    samples: list[float] = []
    claims = 0
    cursor: str | None = None
    try:
        start = time.perf_counter()
        with httpx.Client(timeout=600) as http:
            for _ in range(expected_claims // page_claims + 2):  # bounded: one page more than needed
                params: dict[str, Any] = {"limit": page_claims, "evidence_limit": 10}
                if cursor:
                    params["cursor"] = cursor
                began = time.perf_counter()
                response = http.get(url, params=params)
                samples.append(time.perf_counter() - began)
                response.raise_for_status()
                body = response.json()
                claims += len(body["claims"])
                cursor = body["next_cursor"]
                if cursor is None:
                    break
        seconds = time.perf_counter() - start
    finally:
        stop.set()
        sampler.join(5)
        process.terminate()
        process.wait(30)
    if claims != expected_claims:
        raise AssertionError(f"paging over REST returned {claims} claims, the task has {expected_claims}")
    lat = latency(samples)
    return ServeMemory(
        page_claims=page_claims,
        pages=len(samples),
        claims=claims,
        seconds=seconds,
        page_p50_ms=lat.p50_ms,
        page_p95_ms=lat.p95_ms,
        idle_rss_mb=idle,
        peak_rss_mb=peak,
    )


def graph_document(data: ScaleData, task_id: str) -> dict[str, Any]:
    """The generated graph as a `lyra graph load` document (keys p<i>, f<i>, c<i>)."""
    return {
        "task": {"id": task_id, "hypothesis": f"scale benchmark {data.run}"},
        "claims": [{"key": f"c{i}", "text": text} for i, text in enumerate(data.claim_texts)],
        "pages": [
            {"key": f"p{i}", "url": url, "domain": data.page_domains[i], "year": data.page_years[i]}
            for i, url in enumerate(data.page_urls)
        ],
        "fragments": [
            {"key": f"f{i}", "page": f"p{data.fragment_page[i]}", "text": text, "position": i}
            for i, text in enumerate(data.fragment_texts)
        ],
        "edges": [
            {"fragment": f"f{f}", "claim": f"c{c}", "relation": r, "nli_confidence": w, "cause_id": "bench_scale"}
            for f, c, r, w in zip(
                data.edge_fragment, data.edge_claim, data.edge_relation, data.edge_confidence, strict=True
            )
        ],
        "citations": [
            {"citing": f"p{a}", "cited": f"p{b}", "citation_source": "openalex"}
            for a, b in zip(data.cite_citing, data.cite_cited, strict=True)
        ],
    }


def bulk_measure(services: Services, data: ScaleData, task_id: str, sqlite_ingest: float) -> BulkMeasure:
    """Offline import of the graph into the managed instance, only when its database is empty (the importer
    replaces the whole database); checked against the ground truth, then removed."""
    from lyra.services.bulk_import import bulk_load_graph

    summary = services.store.run("admin/database_summary")[0]
    if summary["nodes"] - summary["test_markers"]:
        return BulkMeasure(
            seconds_total=0,
            seconds_files=0,
            seconds_import=0,
            seconds_restart=0,
            seconds_schema=0,
            sqlite_ingest_seconds=sqlite_ingest,
            ratio=0,
            max_abs_error=0,
            skipped=f"the database holds {summary['nodes']} nodes; the offline importer needs an empty one",
        )
    document = graph_document(data, task_id)
    report, ids = bulk_load_graph(document, services.settings)
    del document
    by_id = {row["claim_id"]: row for row in services.materials.scores(task_id)}
    worst = 0.0
    for i in range(len(data.claim_texts)):
        row = by_id[ids[f"c{i}"]]
        a, b = data.alpha[i], data.beta[i]
        worst = max(worst, abs(row["alpha"] - a), abs(row["beta"] - b), abs(row["confidence"] - a / (a + b)))
    if worst > TOLERANCE:
        raise AssertionError(f"the bulk-imported graph differs from the ground truth by {worst:.3g}")
    return BulkMeasure(
        seconds_total=report.seconds_total,
        seconds_files=report.seconds_files,
        seconds_import=report.seconds_import,
        seconds_restart=report.seconds_restart,
        seconds_schema=report.seconds_schema,
        sqlite_ingest_seconds=sqlite_ingest,
        ratio=report.seconds_total / sqlite_ingest,
        max_abs_error=worst,
    )


def run_scale_bench(
    services: Services,
    claims: int,
    edges: int,
    cites: int,
    rounds: int = 3,
    seed: int = 14,
    keep: bool = False,
    work_dir: Path | None = None,
    serve: bool = False,
    bulk: bool = False,
    floor: bool = False,
) -> ScaleBenchResult:
    load_start = os.getloadavg()
    run = f"s{claims}_{edges}_{cites}"
    task_id = f"bench_scale_{run}"
    print(f"generating {claims:,} claims / {edges:,} edges / {cites:,} cites ...", file=sys.stderr)
    data = generate(claims, edges, cites, run, seed=seed)
    folder = work_dir or services.settings.paths.state_dir / "bench"
    folder.mkdir(parents=True, exist_ok=True)
    sqlite_path = folder / f"scale_{run}.sqlite"

    times: dict[str, list[float]] = {}
    steps: dict[str, list[float]] = {s: [] for s in STEPS}
    sql_steps: dict[str, list[float]] = {s: [] for s in STEPS}

    def add(name: str, seconds: float) -> None:
        times.setdefault(name, []).append(seconds)

    clean_lyra(services, data, task_id)  # a previous run that was interrupted
    worst_lyra = worst_sqlite = 0.0
    claim_ids: list[str] = []
    page_ids: list[str] = []
    try:
        for round_ in range(rounds):
            # The machine is shared: the two loads alternate which goes first, and every read is timed in
            # alternating SQLite / Lyra pairs, so a change of load hits both sides alike.
            reference = SqliteReference(sqlite_path, task_id)
            try:

                def load_sqlite(reference: SqliteReference = reference, round_: int = round_) -> None:
                    print(f"round {round_ + 1}/{rounds}: SQLite load ...", file=sys.stderr)
                    sql_seconds = reference.load(data)
                    for name, value in sql_seconds.items():
                        sql_steps[name].append(value)
                    add("sqlite_ingest", sum(sql_seconds.values()))

                def load_lyra(round_: int = round_) -> tuple[list[str], list[str]]:
                    print(f"round {round_ + 1}/{rounds}: Lyra load ...", file=sys.stderr)
                    if round_:
                        clean_lyra(services, data, task_id)
                    lyra_seconds, pages, claims_ = load_into_lyra(services, data, task_id)
                    for name, value in lyra_seconds.items():
                        steps[name].append(value)
                    add("lyra_ingest", sum(lyra_seconds.values()))
                    return pages, claims_

                if round_ % 2:
                    page_ids, claim_ids = load_lyra()
                    load_sqlite()
                else:
                    load_sqlite()
                    page_ids, claim_ids = load_lyra()
                print(f"round {round_ + 1}/{rounds}: reads, SQLite and Lyra in turn ...", file=sys.stderr)
                reference.scores()  # warm
                services.materials.scores(task_id)
                reference.materials(10)
                lyra_materials(services, task_id, 10)
                for _ in range(READS_PER_ROUND):
                    seconds, scores = _timed(reference.scores)
                    add("sqlite_score_all", seconds)
                    worst_sqlite = max(worst_sqlite, check_sqlite(scores, data, reference.claim_ids))
                    seconds, scored = _timed(lambda: services.materials.scores(task_id))
                    add("lyra_score_all", seconds)
                    worst_lyra = max(worst_lyra, check_lyra(scored, data, claim_ids, "scores"))
                    del scores, scored
                for _ in range(READS_PER_ROUND):
                    add("sqlite_materials_10", _timed(partial(reference.materials, 10))[0])
                    seconds, listed = _timed(lambda: lyra_materials(services, task_id, 10))
                    add("lyra_materials_10", seconds)
                    claims_listed = [c.model_dump(include=CHECKED_FIELDS) for c in listed.claims]
                    worst_lyra = max(worst_lyra, check_lyra(claims_listed, data, claim_ids, "get_materials"))
                    del listed, claims_listed
                for _ in range(READS_PER_ROUND):
                    add("sqlite_materials_all", _timed(partial(reference.materials, 1000))[0])
                    add("lyra_materials_all", _timed(lambda: lyra_materials(services, task_id, 1000))[0])
            finally:
                reference.close()
        print("lyra materials --json (whole process) ...", file=sys.stderr)
        cli_seconds, cli_rss, cli_bytes = materials_cli(task_id)
        served = None
        if serve:
            print("lyra serve: paging through every claim over REST, sampling RSS ...", file=sys.stderr)
            served = serve_memory(services, task_id, claims)
        floored = None
        if floor:  # after every read: the floor's edges change the claims' numbers (the clean-up removes them)
            sqlite_medians = {k: _median(v) for k, v in sql_steps.items()}
            floored = measure_write_floor(services, data, page_ids, claim_ids, sqlite_medians)
        bulked = None
        if bulk:
            clean_lyra(services, data, task_id)
            print("lyra graph load --bulk (offline importer) ...", file=sys.stderr)
            bulked = bulk_measure(services, data, task_id, _median(times["sqlite_ingest"]))
    finally:
        if not keep:
            clean_lyra(services, data, task_id)
        sqlite_path.unlink(missing_ok=True)
        for suffix in ("-wal", "-shm"):
            Path(str(sqlite_path) + suffix).unlink(missing_ok=True)

    size = f"{claims}/{edges}/{cites}"
    issue = ISSUE_TABLE.get(size, {})
    before = ISSUE_LYRA_BEFORE.get(size, {})

    def measure(name: str, lyra_key: str, sqlite_key: str | None, kind: str | None) -> Measure:
        lyra_s = _median(times[lyra_key])
        sql_s = _median(times[sqlite_key]) if sqlite_key else None
        return Measure(
            name=name,
            lyra_seconds=lyra_s,
            sqlite_seconds=sql_s,
            ratio=lyra_s / sql_s if sql_s else None,
            target_ratio=TARGET_RATIO.get(kind or ""),
            issue_sqlite_seconds=issue.get(kind or ""),
            issue_lyra_before=before.get(kind or ""),
        )

    measures = [
        measure("ingest (all steps)", "lyra_ingest", "sqlite_ingest", "ingest"),
        measure("score every claim (alpha, beta, confidence, ...)", "lyra_score_all", "sqlite_score_all", "score_all"),
        measure("materials, 10 evidence items per claim", "lyra_materials_10", "sqlite_materials_10", "materials"),
        measure("materials, every evidence item", "lyra_materials_all", "sqlite_materials_all", None),
    ]
    fragments = len(data.fragment_texts)
    pages = len(data.page_urls)
    return ScaleBenchResult(
        claims=claims,
        edges=edges,
        cites=cites,
        fragments=fragments,
        pages=pages,
        rounds=rounds,
        seed=seed,
        measures=measures,
        ingest_steps={k: _median(v) for k, v in steps.items()},
        sqlite_ingest_steps={k: _median(v) for k, v in sql_steps.items()},
        materials_cli_seconds=cli_seconds,
        materials_cli_peak_rss_mb=cli_rss,
        materials_cli_bytes=cli_bytes,
        bench_peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        max_abs_error_lyra=worst_lyra,
        max_abs_error_sqlite=worst_sqlite,
        claims_checked=len(claim_ids),
        load_average=load_start,
        load_average_end=os.getloadavg(),
        serve=served,
        bulk=bulked,
        floor=floored,
    )


# ---------------------------------------------------------------------------------------------- command line
app = typer.Typer(add_completion=False, help="Issue 14's scale table: Lyra beside a SQLite reconstruction.")


@app.command()
@handle_errors
def main(
    claims: int = typer.Option(10_000, min=1, help="claims"),
    edges: int = typer.Option(100_000, min=2, help="stance edges (fragments = edges / 2, pages = fragments / 5)"),
    cites: int = typer.Option(20_000, min=0, help="CITES edges between random page pairs"),
    rounds: int = typer.Option(3, min=1, help="rounds (load + reads); medians are reported"),
    seed: int = typer.Option(14, help="seed of the generated graph"),
    keep: bool = typer.Option(False, help="keep the synthetic task and pages afterwards"),
    serve: bool = typer.Option(False, help="also page through every claim over REST from `lyra serve`, sampling RSS"),
    bulk: bool = typer.Option(
        False, help="also time `lyra graph load --bulk` of the same graph (only into an empty managed instance)"
    ),
    floor: bool = typer.Option(
        False,
        help="also time the fragment and stance-edge writes with no identity checks and with no write at all, "
        "beside Lyra's (how far below Lyra a transactional write can go; cannot be combined with --keep)",
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Issue 14's scale table: ingest, score-all and materials in Lyra and in a SQLite reconstruction of the
    original's SQL path, side by side on the same generated graph, checked against its ground truth."""
    if floor and keep:
        raise InvalidInputError("--floor", "cannot be combined with --keep: the floor's writes change the kept task")
    # loads and clean-ups of half a million edges run past the default 60 s statement timeout on a busy machine
    settings = settings_from_env()
    settings = settings.model_copy(update={"query_timeout": max(settings.graph.query_timeout, 3600.0)})
    with open_services(settings) as services:
        result = run_scale_bench(
            services, claims, edges, cites, rounds=rounds, seed=seed, keep=keep, serve=serve, bulk=bulk, floor=floor
        )
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    for table in scale_tables(result):
        out.print(table)


def scale_tables(result: ScaleBenchResult) -> list[Table]:
    """The scale benchmark's tables: the measures side by side, then ingest per step, then process facts."""
    size = f"{result.claims:,} claims / {result.edges:,} edges / {result.cites:,} cites"
    title = f"scale: {size} ({result.fragments:,} fragments, {result.pages:,} pages; {result.rounds} rounds, medians)"
    main = Table(
        "measure",
        "Lyra",
        "SQLite (same run)",
        "Lyra / SQLite",
        "target",
        "issue: SQL",
        "issue: Lyra before",
        title=title,
    )
    for m in result.measures:
        main.add_row(
            m.name,
            f"{m.lyra_seconds:.3f} s",
            f"{m.sqlite_seconds:.3f} s" if m.sqlite_seconds is not None else "-",
            f"{m.ratio:.2f}x" if m.ratio is not None else "-",
            f"<= {m.target_ratio:.1f}x" if m.target_ratio is not None else "-",
            f"{m.issue_sqlite_seconds:g} s" if m.issue_sqlite_seconds is not None else "-",
            f"{m.issue_lyra_before} s" if m.issue_lyra_before else "-",
        )
    steps = Table("ingest step", "Lyra", "SQLite", "Lyra / SQLite", title="ingest per step (medians)")
    for name, seconds in result.ingest_steps.items():
        sql = result.sqlite_ingest_steps.get(name)
        steps.add_row(name, f"{seconds:.3f} s", f"{sql:.3f} s" if sql else "-", f"{seconds / sql:.2f}x" if sql else "-")
    facts = Table("measure", "value", title="process")
    facts.add_row(
        "`lyra materials --json` (whole process, 10 items per claim)",
        f"{result.materials_cli_seconds:.2f} s, peak RSS {result.materials_cli_peak_rss_mb:.0f} MB, "
        f"{result.materials_cli_bytes / 1e6:.1f} MB of JSON",
    )
    facts.add_row("peak RSS of the benchmark process", f"{result.bench_peak_rss_mb:.0f} MB")
    facts.add_row(
        f"checked against the ground truth ({result.claims_checked:,} claims)",
        f"max |error| Lyra {result.max_abs_error_lyra:.1e}, SQLite {result.max_abs_error_sqlite:.1e}",
    )
    facts.add_row(
        "load average (start / end)",
        " ".join(f"{x:.2f}" for x in result.load_average)
        + " / "
        + " ".join(f"{x:.2f}" for x in result.load_average_end),
    )
    if result.serve is not None:
        s = result.serve
        facts.add_row(
            f"`lyra serve`: REST paging through {s.claims:,} claims ({s.pages} pages of {s.page_claims})",
            f"{s.seconds:.1f} s; page p50 {s.page_p50_ms:.0f} ms, p95 {s.page_p95_ms:.0f} ms",
        )
        facts.add_row(
            "`lyra serve` RSS: idle / peak while paging",
            f"{s.idle_rss_mb:.0f} MB / {s.peak_rss_mb:.0f} MB (limit {s.limit_mb:.0f} MB: "
            f"{'met' if s.peak_rss_mb < s.limit_mb else 'NOT met'})",
        )
    if result.bulk is not None:
        b = result.bulk
        if b.skipped:
            facts.add_row("`lyra graph load --bulk`", f"skipped: {b.skipped}")
        else:
            facts.add_row(
                "`lyra graph load --bulk` (offline importer), whole",
                f"{b.seconds_total:.1f} s = {b.ratio:.2f}x the SQLite ingest ({b.sqlite_ingest_seconds:.1f} s)",
            )
            facts.add_row(
                "  files / neo4j-admin import / restart / schema",
                f"{b.seconds_files:.1f} / {b.seconds_import:.1f} / {b.seconds_restart:.1f} / {b.seconds_schema:.1f} s",
            )
    tables = [main, steps, facts]
    if result.floor:
        floor = Table(
            "step",
            "rows",
            "transfer only",
            "blind create",
            "Lyra",
            "SQLite",
            "blind / SQLite",
            title="write floor (median seconds; microseconds per row): see benchmarks/write_floor.py",
        )
        for f in result.floor:

            def cell(seconds: float, f: FloorStep = f) -> str:
                return f"{seconds:.2f} s ({f.per_row_us(seconds):.0f} us)"

            sql = f.sqlite_seconds
            floor.add_row(
                f.step,
                f"{f.rows:,}",
                cell(f.transfer_seconds),
                cell(f.blind_seconds),
                cell(f.lyra_seconds),
                cell(sql) if sql else "-",
                f"{f.blind_seconds / sql:.2f}x" if sql else "-",
            )
        tables.append(floor)
    return tables


if __name__ == "__main__":
    app()
