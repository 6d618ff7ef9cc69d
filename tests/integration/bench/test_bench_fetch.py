"""`lyra bench fetch` at a tiny size on the real Neo4j, the real fetcher and a real local HTTP server: every page is
read in each mode, politeness on keeps the per-domain spacing of the setting (measured from the server's log) while
off does not, chromium renders when asked, the ingest of the fetched pages runs with the real models, and the bench
leaves nothing behind."""

from __future__ import annotations

import json

import pytest

from lyra.bench.fetch import DOMAIN_SUFFIX, TASK_ID, FetchBenchResult
from lyra.bootstrap import Services
from tests.support.helpers import run_lyra

pytestmark = pytest.mark.neo4j


def test_bench_fetch_measures_politeness_and_leaves_nothing_behind(graph: Services) -> None:
    args = ["bench", "fetch", "--pages", "12", "--domains", "3", "--browser-pages", "0", "--json"]
    result = run_lyra(*args, timeout=900)
    assert result.returncode == 0, result.stderr
    bench = FetchBenchResult.model_validate(json.loads(result.stdout))

    off, on = bench.modes
    assert (off.name, on.name) == ("httpx, politeness off", "httpx, politeness on")
    assert off.ok == on.ok == 12 and off.codes == on.codes == {"ok": 12}
    assert on.qps_setting is not None and on.min_gap_seconds is not None and off.min_gap_seconds is not None
    # never faster than the setting per domain; the gap is measured where requests arrive, so a loaded machine's
    # scheduling jitter between the limiter and the server is allowed (a tenth of the interval)
    assert on.min_gap_seconds >= 0.9 / on.qps_setting
    assert off.min_gap_seconds < 1 / on.qps_setting  # without politeness nothing spaces the requests
    assert on.wait_seconds > 0 and off.wait_seconds == 0
    assert on.wall_seconds > off.wall_seconds
    assert bench.ingest is not None and bench.ingest.pages == 12 and bench.ingest.pages_new == 12
    assert bench.ingest.fragments > 0
    shares = bench.share()
    assert abs(sum(shares.values()) - 1.0) < 1e-6 and set(shares) >= {"fetch", "extraction", "judging"}

    assert not graph.tasks.tasks.exists(TASK_ID)
    left, _, _ = graph.store.driver.execute_query(
        "MATCH (p:Page) WHERE p.domain ENDS WITH $suffix RETURN count(p) AS n",
        {"suffix": DOMAIN_SUFFIX},
        database_=graph.store.database,
    )
    assert left[0]["n"] == 0


@pytest.mark.browser
def test_bench_fetch_renders_pages_in_chromium(graph: Services) -> None:
    args = ["bench", "fetch", "--pages", "4", "--domains", "2", "--browser-pages", "2", "--no-ingest", "--json"]
    result = run_lyra(*args, timeout=600)
    assert result.returncode == 0, result.stderr
    bench = FetchBenchResult.model_validate(json.loads(result.stdout))
    browser = bench.modes[2]
    assert browser.name == "chromium, politeness off" and browser.ok == browser.pages == 2
    assert browser.render_seconds > 0 and bench.modes[0].render_seconds == 0
