"""`lyra bench ...`: benchmarks that print numbers (side by side in one run)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from lyra.cli.common import handle_errors, open_services, out, settings_from_env

if TYPE_CHECKING:
    from lyra.bench.citations import CitationBenchResult, CitationRun
    from lyra.bench.fetch import FetchBenchResult, FetchMode
    from lyra.bench.timing import IngestRate

bench_app = typer.Typer(help="Benchmarks that print numbers.", no_args_is_help=True)


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

    with open_services() as services:
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

    with open_services() as services:
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

    settings_from_env()
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
    compare: list[str] = typer.Option([], help="also time these judges on the same pairs (e.g. llm, trained+llm)"),
    judge_pairs: int | None = typer.Option(
        None, min=1, help="time the cold judges on only the first N of the ingest's pairs (a time bound)"
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Pipeline throughput on the demo corpus (and a synthetic one) and its share of time inside the models."""
    import tempfile

    from lyra.bench.pipeline import run_pipeline_bench, write_synthetic_corpus

    settings = settings_from_env()
    corpus = settings.paths.examples_dir / "corpus"
    claims = [q["claim"] for q in json.loads((corpus / "questions.json").read_text(encoding="utf-8"))]
    results = [run_pipeline_bench(settings, corpus, claims, "demo corpus", compare, judge_pairs)]
    if synthetic:
        with tempfile.TemporaryDirectory(prefix="lyra-synthetic-") as folder:
            write_synthetic_corpus(Path(folder), synthetic)
            results.append(
                run_pipeline_bench(
                    settings,
                    Path(folder),
                    ["Drug A lowers blood pressure.", "The reading app improves test scores."],
                    f"synthetic {synthetic:,} fragments",
                    compare,
                    judge_pairs,
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
    for r in results:
        if r.ingest_llm_calls_per_pair is not None:
            out.print(
                f"{r.corpus} ingest: {r.ingest_llm_calls_per_pair:.2f} LLM calls and "
                f"{r.ingest_prompt_tokens_per_pair:.0f} prompt tokens evaluated per judged pair"
            )
        judges = Table(
            "judge",
            "pairs",
            "s",
            "pairs/s",
            "× configured",
            "LLM calls/pair",
            "prompt tokens evaluated/pair",
            "cached/pair",
            "pairs to LLM",
            title=f"{r.corpus}: the judges on the same pairs, cold caches",
        )
        base = r.judges[0].pairs_per_second if r.judges else 0.0

        def num(value: float | None, spec: str) -> str:
            return "n/a" if value is None else format(value, spec)

        for j in r.judges:
            judges.add_row(
                j.judge,
                str(j.pairs),
                f"{j.seconds:.1f}",
                f"{j.pairs_per_second:.2f}",
                f"{j.pairs_per_second / base:.2f}" if base else "n/a",
                num(j.llm_calls_per_pair, ".2f"),
                num(j.prompt_tokens_evaluated_per_pair, ".0f"),
                num(j.prompt_tokens_cached_per_pair, ".0f"),
                num(j.llm_pair_share, ".0%"),
            )
        out.print(judges)


@bench_app.command("citations")
@handle_errors
def bench_citations(
    sources: int = typer.Option(10, min=1, max=100, help="source papers in the synthetic corpus"),
    candidates: int = typer.Option(100, min=2, max=1000, help="neighbours per source paper (half cited, half citing)"),
    seed: int = typer.Option(0, help="seed of the synthetic corpus"),
    stage1_top_k: int = typer.Option(30, min=1, help="Stage-1 cut per source (= LLM calls per source, LLM raters)"),
    rater: str | None = typer.Option(
        None, help="Stage 2's rater: ranker | embedding | llm-yes-no | llm-scale (default: LYRA_CITATION_STAGE2_RATER)"
    ),
    llm: bool = typer.Option(True, "--llm/--no-llm", help="give an LLM rater the local LLM (off: Stage-1 order)"),
    pages: int = typer.Option(1000, min=0, help="synthetic abstract pages for the ingest rate (0: skip)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Citation expansion against the local replay server, stage by stage, run twice (the second from the response
    cache), and the ingest rate of abstract pages."""
    from lyra.bench.citations import run_citation_bench

    result = run_citation_bench(
        settings_from_env(), sources, candidates, seed, stage1_top_k=stage1_top_k, llm=llm, pages=pages, rater=rater
    )
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    for table in citation_tables(result):
        out.print(table)


def citation_tables(result: CitationBenchResult) -> list[Table]:
    """The citation benchmark's tables: per stage, the runs side by side; then the ingest rate."""
    runs = result.runs
    title = (
        f"citation expansion: {result.sources} source papers x {result.candidates_per_source} candidates "
        f"(seed {result.seed}; Stage-1 top {result.stage1_top_k}, Stage-2 top {result.stage2_top_k}; "
        f"rater {result.stage2_rater}, LLM {'on' if result.llm else 'off'})"
    )
    stages = Table("measure", *(f"run {i + 1}" for i in range(len(runs))), title=title)

    def row(name: str, cell: Callable[[CitationRun], str]) -> None:
        stages.add_row(name, *(cell(r) for r in runs))

    def per_call(r: CitationRun) -> str:
        return f"{r.llm_calls} ({r.stage2_seconds / r.llm_calls:.2f} s each)" if r.llm_calls else "0"

    row("resolve source DOIs", lambda r: f"{r.resolve_seconds:.2f} s")
    row("API gathering (neighbours)", lambda r: f"{r.gather_seconds:.2f} s")
    row("Stage 0", lambda r: f"{r.stage0_seconds:.3f} s")
    row("Stage 1 (embedding + impact)", lambda r: f"{r.stage1_seconds:.2f} s")
    row(f"Stage 2 ({result.stage2_rater})", lambda r: f"{r.stage2_seconds:.2f} s")
    row("graph writes (pages + CITES)", lambda r: f"{r.write_seconds:.2f} s")
    row("ingest of the read abstracts", lambda r: f"{r.ingest_seconds:.2f} s")
    row("total", lambda r: f"{r.seconds_total:.2f} s")
    row(
        "candidates > Stage 0 > Stage 1 > final",
        lambda r: f"{r.candidates} > {r.after_stage0} > {r.after_stage1} > {r.final}",
    )
    row("LLM calls", per_call)
    row("papers seen (pages written)", lambda r: str(r.papers_seen))
    row("CITES pairs (new)", lambda r: f"{r.citations} ({r.citations_new})")
    row("abstract pages read (new fragments)", lambda r: f"{r.pages_read} ({r.fragments_new})")
    row("pairs judged (from cache)", lambda r: f"{r.pairs_judged} ({r.pairs_from_cache})")
    row("API requests sent / cache hits", lambda r: f"{r.requests} / {r.cache_hits}")
    row("requests logged by the server", lambda r: str(r.server_requests))
    tables = [stages]
    loads = Table("model load, outside the timed stages", "seconds")
    loads.add_row("embedder", f"{result.embedder_load_seconds:.1f}")
    loads.add_row("LLM (+ one warm-up call)", f"{result.llm_load_seconds:.1f}" if result.llm_load_seconds else "-")
    loads.add_row("stance judge (+ one warm-up pair)", f"{result.judge_load_seconds:.1f}")
    tables.append(loads)
    if result.ingest is not None:
        tables.append(ingest_table(result.ingest, f"ingest of {result.ingest.pages:,} abstract pages"))
    return tables


def ingest_table(g: IngestRate, title: str) -> Table:
    """An ingest's rate and where its time went."""
    total = g.seconds_total or 1.0
    ingest = Table("measure", "value", title=title)
    ingest.add_row("wall time", f"{g.seconds_total:.1f} s")
    ingest.add_row("pages/s", f"{g.pages_per_second:.2f} ({g.pages_new:,} new pages)")
    ingest.add_row("fragments/s", f"{g.fragments_per_second:.2f} ({g.fragments:,} fragments)")
    ingest.add_row("pairs judged", f"{g.pairs_judged:,}")
    ingest.add_row("embedding", f"{g.seconds_embedding:.1f} s ({g.seconds_embedding / total:.0%})")
    ingest.add_row("judging (stance judge)", f"{g.seconds_judging:.1f} s ({g.seconds_judging / total:.0%})")
    ingest.add_row("writes, dedup, ranking, caches", f"{g.seconds_other:.1f} s ({g.seconds_other / total:.0%})")
    ingest.add_row("in models (IngestReport)", f"{g.seconds_in_models:.1f} s ({g.seconds_in_models / total:.0%})")
    return ingest


@bench_app.command("fetch")
@handle_errors
def bench_fetch(
    pages: int = typer.Option(200, min=1, max=5000, help="generated article pages served on 127.0.0.1"),
    domains: int = typer.Option(10, min=1, max=100, help="host names the pages are spread over"),
    workers: int = typer.Option(2, min=1, max=16, help="fetching threads (as job workers)"),
    browser_pages: int = typer.Option(40, min=0, help="pages rendered by chromium (0: skip the browser mode)"),
    seed: int = typer.Option(0, help="seed of the generated pages"),
    ingest: bool = typer.Option(True, "--ingest/--no-ingest", help="also read the fetched pages into a task"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The web fetcher on a local web: politeness off vs on, httpx vs chromium, pages/s, and where a page's time
    goes (fetch, extraction, ingest with judging)."""
    from lyra.bench.fetch import run_fetch_bench

    result = run_fetch_bench(
        settings_from_env(), pages, domains, workers, browser_pages=browser_pages, seed=seed, ingest=ingest
    )
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    for table in fetch_tables(result):
        out.print(table)


def fetch_tables(result: FetchBenchResult) -> list[Table]:
    """The fetch benchmark's tables: the modes side by side, the ingest of the fetched pages, the time shares."""
    modes = Table(
        "measure",
        *(m.name for m in result.modes),
        title=f"fetching {result.pages} local pages on {result.domains} domains with {result.workers} workers",
    )

    def row(name: str, cell: Callable[[FetchMode], str]) -> None:
        modes.add_row(name, *(cell(m) for m in result.modes))

    row("pages (ok)", lambda m: f"{m.pages} ({m.ok})")
    row("wall time", lambda m: f"{m.wall_seconds:.2f} s")
    row("pages/s", lambda m: f"{m.pages_per_second:.1f}")

    def summed(seconds: float, m: FetchMode) -> str:
        return f"{seconds:.2f} s ({seconds / max(m.pages, 1) * 1000:.1f} ms/page)"

    row("fetch, summed", lambda m: summed(m.fetch_seconds, m))
    row("extraction, summed", lambda m: summed(m.extract_seconds, m))
    row("chromium rendering, summed", lambda m: summed(m.render_seconds, m))
    row("politeness waits, summed", lambda m: f"{m.wait_seconds:.2f} s")
    row(
        "shortest gap per domain (setting)",
        lambda m: (
            (f"{m.min_gap_seconds:.3f} s" if m.min_gap_seconds is not None else "-")
            + (f" (>= {1 / m.qps_setting:.3f} s)" if m.qps_setting else "")
        ),
    )
    row("codes", lambda m: ", ".join(f"{k} {v}" for k, v in sorted(m.codes.items())))
    tables = [modes]
    if result.ingest is not None:
        tables.append(ingest_table(result.ingest, f"ingest of the {result.ingest.pages:,} fetched pages"))
    shares = Table("per page, politeness off", "share of time", title="where a fetched page's time goes")
    for name, share in result.share().items():
        shares.add_row(name, f"{share:.0%}")
    tables.append(shares)
    return tables
