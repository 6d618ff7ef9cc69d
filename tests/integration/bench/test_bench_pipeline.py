"""`lyra bench pipeline`'s measurement on the real Neo4j and the real offline models: a small synthetic corpus is
ingested with the network-only judge, then fresh judges with cold caches judge the same first pairs, and each is
reported with its LLM calls, prompt tokens (llama.cpp's own counts) and the share of pairs it put to the LLM; the run
leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from lyra.bench.pipeline import SYNTHETIC_URL, run_pipeline_bench, write_synthetic_corpus
from lyra.bootstrap import Services
from lyra.core.settings import Settings

pytestmark = [pytest.mark.neo4j, pytest.mark.models]
CLAIMS = ["Drug A lowers blood pressure.", "The reading app improves test scores."]


def test_the_cold_judges_report_their_calls_tokens_and_llm_share(
    graph: Services, settings: Settings, tmp_path: Path
) -> None:
    write_synthetic_corpus(tmp_path, 60)
    network_only = settings.model_copy(update={"stance_use_llm": False})
    compare = ["trained+llm", "trained+llm-claim-first"]
    result = run_pipeline_bench(network_only, tmp_path, CLAIMS, "synthetic", compare, judge_pairs=2)

    assert result.documents == 60 and result.pairs_judged >= 2
    assert [j.judge for j in result.judges] == ["configured", *compare]
    assert all(j.pairs == 2 and j.seconds > 0 for j in result.judges)
    assert result.ingest_llm_calls_per_pair is None  # the ingest's judge asked no LLM
    configured = result.judges[0]
    assert (configured.llm_pair_share, configured.llm_calls_per_pair) == (0.0, 0.0)
    assert result.raw_judge_pairs_per_second == configured.pairs_per_second
    for judge in result.judges[1:]:
        # no cascade threshold: every pair goes to the LLM, three questions each (the shipped combiner reads the
        # two yes/no answers and the verdict); a cold cache means every call reaches the model
        assert judge.llm_pair_share == 1.0
        assert judge.llm_calls_per_pair == 3.0
        assert judge.prompt_tokens_evaluated_per_pair is not None and judge.prompt_tokens_evaluated_per_pair > 0
        assert judge.prompt_tokens_cached_per_pair is not None
    assert set(result.compared_judges_pairs_per_second) == set(compare)

    with graph.store.driver.session(database=graph.store.database) as session:
        left = session.run(
            "MATCH (p:Page) WHERE p.url STARTS WITH $prefix RETURN count(p) AS n", prefix=SYNTHETIC_URL
        ).single(strict=True)["n"]
    assert left == 0
    assert not graph.tasks.tasks.exists("bench_pipeline")
