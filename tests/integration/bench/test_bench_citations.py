"""`lyra bench citations` at a tiny size (2 source papers x 10 candidates, 20 abstract pages, no Stage-2 LLM) on the
real Neo4j, the real offline models and the replay server: the printed numbers agree with the corpus and with each
other, the second run is served from the response cache, and the bench leaves nothing behind."""

from __future__ import annotations

import json

import pytest

from lyra.bench.citations import TASK_ID, CitationBenchResult, corpus_counts
from lyra.bootstrap import Services
from lyra.testing.scholarly import synthetic_corpus
from tests.support.helpers import run_lyra

pytestmark = pytest.mark.neo4j


def test_bench_citations_prints_consistent_numbers_and_run_two_sends_no_request(graph: Services) -> None:
    args = ["bench", "citations", "--sources", "2", "--candidates", "10", "--pages", "20", "--no-llm", "--json"]
    result = run_lyra(*args, timeout=600)
    assert result.returncode == 0, result.stderr
    bench = CitationBenchResult.model_validate(json.loads(result.stdout))

    corpus_candidates, with_abstract = corpus_counts(synthetic_corpus(2, 10, 0))
    assert (bench.corpus_candidates, bench.corpus_candidates_with_abstract) == (corpus_candidates, with_abstract)
    first, second = bench.runs
    for run in (first, second):
        assert run.candidates == corpus_candidates == 20  # every neighbour found, OpenAlex-only ones merged
        assert run.after_stage0 == with_abstract  # Stage 0 drops exactly the ones without an abstract
        # 9 readable candidates per source: under both the Stage-1 top 30 and the Stage-2 top 10
        assert run.after_stage1 == run.final == run.after_stage0 and run.llm_calls == 0
        assert run.papers_seen == 2 + corpus_candidates and run.citations == corpus_candidates
        assert run.pages_read == 2 + run.final
        assert run.requests == run.server_requests
    assert first.requests > 0 and first.cache_hits == 0
    assert second.requests == 0 and second.server_requests == 0 and second.cache_hits == first.requests
    assert first.citations_new == first.citations and second.citations_new == 0
    assert second.fragments_new == 0 and second.pairs_from_cache == second.pairs_judged

    assert bench.ingest is not None
    ingest = bench.ingest
    assert ingest.pages == ingest.pages_new == 20 and ingest.fragments >= 20
    assert ingest.pages_per_second == pytest.approx(ingest.pages / ingest.seconds_total)
    assert ingest.seconds_embedding + ingest.seconds_judging + ingest.seconds_other == pytest.approx(
        ingest.seconds_total
    )

    # nothing left behind: the task, its pages and fragments are gone
    assert not graph.tasks.tasks.exists(TASK_ID)
    records, _, _ = graph.store.driver.execute_query(
        "MATCH (n) WHERE n:Page OR n:Fragment OR n:Claim RETURN count(n) AS n", database_=graph.store.database
    )
    assert records[0]["n"] == 0
