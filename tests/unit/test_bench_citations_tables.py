"""The tables `lyra bench citations` prints, from a made-up result (no I/O)."""

from __future__ import annotations

import pytest
from rich.console import Console

from lyra.bench.citations import CitationBenchResult, CitationRun, IngestRate
from lyra.cli.bench import citation_tables


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
    assert "Stage 2 (LLM)" in text and "4 (0.12 s each)" in text
    assert "14 / 0" in text and "0 / 14" in text
    assert "5.00 (20 new pages)" in text and "judging (stance judge)" in text
    assert run.seconds_total == pytest.approx(5.5)
