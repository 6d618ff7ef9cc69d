"""The tables `lyra bench citations` and `lyra bench fetch` print, from made-up results (no I/O)."""

from __future__ import annotations

import pytest
from rich.console import Console

from lyra.bench.citations import CitationBenchResult, CitationRun
from lyra.bench.fetch import FetchBenchResult, FetchMode
from lyra.bench.timing import IngestRate
from lyra.cli.bench import citation_tables, fetch_tables


def test_bench_citations_tables_render_every_stage() -> None:
    run = CitationRun(
        **dict.fromkeys(
            ["resolve_seconds", "gather_seconds", "stage0_seconds", "stage1_seconds", "stage2_seconds"], 0.5
        ),
        write_seconds=1.0,
        ingest_seconds=2.0,
        **dict.fromkeys(["candidates", "after_stage0", "after_stage1", "final", "papers_seen", "citations"], 10),
        llm_calls=4,
        citations_new=10,
        pages_read=12,
        fragments_new=12,
        pairs_judged=8,
        pairs_from_cache=0,
        requests=14,
        cache_hits=0,
        server_requests=14,
        api={},
    )
    bench = CitationBenchResult(
        sources=2,
        candidates_per_source=10,
        seed=0,
        stage1_top_k=5,
        stage2_top_k=10,
        llm=True,
        corpus_candidates=20,
        corpus_candidates_with_abstract=18,
        embedder_load_seconds=1.0,
        llm_load_seconds=2.0,
        judge_load_seconds=3.0,
        runs=[run, run.model_copy(update={"requests": 0, "cache_hits": 14, "server_requests": 0})],
        ingest=IngestRate(
            pages=20,
            pages_new=20,
            fragments=20,
            pairs_judged=8,
            seconds_total=4.0,
            seconds_in_models=3.0,
            seconds_embedding=1.0,
            seconds_judging=2.0,
            seconds_other=1.0,
            pages_per_second=5.0,
            fragments_per_second=5.0,
        ),
    )
    console = Console(width=150, record=True)
    for table in citation_tables(bench):
        console.print(table)
    text = console.export_text()
    assert "Stage 2 (llm-scale)" in text and "4 (0.12 s each)" in text
    assert "14 / 0" in text and "0 / 14" in text
    assert "5.00 (20 new pages)" in text and "judging (stance judge)" in text
    assert run.seconds_total == pytest.approx(5.5)


def test_bench_fetch_tables_put_the_modes_side_by_side_and_the_shares_add_up() -> None:
    def mode(name: str, wall: float, wait: float, render: float, gap: float, qps: float | None) -> FetchMode:
        return FetchMode(
            name=name,
            workers=2,
            pages=10,
            ok=10,
            codes={"ok": 10},
            wall_seconds=wall,
            pages_per_second=10 / wall,
            fetch_seconds=0.2,
            wait_seconds=wait,
            extract_seconds=0.1,
            render_seconds=render,
            min_gap_seconds=gap,
            qps_setting=qps,
        )

    ingest = IngestRate(
        pages=10,
        pages_new=10,
        fragments=30,
        pairs_judged=8,
        seconds_total=9.7,
        seconds_in_models=9.0,
        seconds_embedding=1.0,
        seconds_judging=8.0,
        seconds_other=0.7,
        pages_per_second=1.0,
        fragments_per_second=3.0,
    )
    bench = FetchBenchResult(
        pages=10,
        domains=2,
        workers=2,
        seed=0,
        modes=[
            mode("httpx, politeness off", 0.5, 0.0, 0.0, 0.01, None),
            mode("httpx, politeness on", 5.0, 8.0, 0.0, 1.0, 1.0),
        ],
        ingest=ingest,
    )
    console = Console(width=160, record=True)
    for table in fetch_tables(bench):
        console.print(table)
    text = console.export_text()
    assert "httpx, politeness on" in text and "1.000 s (>= 1.000 s)" in text and "20.0" in text
    assert bench.share() == pytest.approx(
        {"fetch": 0.02, "extraction": 0.01, "judging": 0.8, "embedding": 0.1, "writes, dedup, ranking": 0.07}
    )
