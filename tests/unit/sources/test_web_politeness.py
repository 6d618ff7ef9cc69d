"""Politeness pieces without I/O: the shared rate limiter, the daily page budget, robots.txt answers and the
decision taken from config/domains.yaml when no graph-backed gate is given."""

from __future__ import annotations

import threading
from datetime import date
from pathlib import Path

from lyra.sources.domain_policy import ReloadingDomainPolicy
from lyra.sources.web.politeness import MemoryPageCounter, PolicyDecider, RateLimiter, RobotsCache, RobotsFile

ROOT = Path(__file__).resolve().parents[3]


class FakeClock:
    """A clock that stands still unless a test moves it (sleeping does not move it: slots are computed up front)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_rate_limiter_gives_each_caller_the_next_free_slot_of_its_domain() -> None:
    clock = FakeClock()
    slept: list[float] = []
    limiter = RateLimiter(clock=clock, sleep=slept.append)
    waits = [limiter.wait("a.example", 0.5) for _ in range(4)]
    assert waits == [0.0, 0.5, 1.0, 1.5]
    assert limiter.wait("b.example", 0.5) == 0.0  # another domain is not held up
    clock.now += 10
    assert limiter.wait("a.example", 0.5) == 0.0  # slots do not pile up while idle
    assert slept == [0.5, 1.0, 1.5]


def test_the_rate_limiter_reserves_distinct_slots_for_concurrent_threads() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock=clock, sleep=lambda s: None)
    waits: list[float] = []
    lock = threading.Lock()

    def take() -> None:
        got = limiter.wait("x.example", 0.25)
        with lock:
            waits.append(got)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(waits) == [0.25 * i for i in range(8)]


def test_the_daily_budget_counts_per_domain_and_starts_again_the_next_day() -> None:
    counter = MemoryPageCounter()
    day = date(2026, 1, 1)
    assert [counter.take("a.example", 2, day) for _ in range(3)] == [True, True, False]
    assert counter.take("b.example", 2, day)
    assert counter.take("a.example", 2, date(2026, 1, 2))


def _robots(status: int | None, text: str = "") -> RobotsCache:
    loads: list[str] = []

    def load(origin: str) -> RobotsFile:
        loads.append(origin)
        return RobotsFile(status, text, "connection refused" if status is None else "")

    cache = RobotsCache(load, "Lyra")
    cache.loads = loads  # type: ignore[attr-defined]
    return cache


def test_robots_rules_for_lyra_are_applied_and_the_file_is_read_once() -> None:
    cache = _robots(
        200, "User-agent: *\nDisallow: /private/\n\nUser-agent: Lyra\nDisallow: /no-lyra/\nCrawl-delay: 2\n"
    )
    origin = "https://site.example"
    assert not cache.check(origin, f"{origin}/no-lyra/page").allowed
    answer = cache.check(origin, f"{origin}/private/page")
    assert answer.allowed  # the Lyra group replaces the * group (RFC 9309)
    assert answer.crawl_delay == 2
    assert cache.loads == [origin]  # type: ignore[attr-defined]


def test_a_missing_robots_txt_allows_everything_and_an_unreachable_one_nothing() -> None:
    assert _robots(404).check("https://a.example", "https://a.example/x").allowed
    for status in (None, 503):
        answer = _robots(status).check("https://a.example", "https://a.example/x")
        assert not answer.allowed and "could not be read" in answer.reason


def test_without_a_gate_the_denylist_and_politeness_of_domains_yaml_decide() -> None:
    decider = PolicyDecider(ReloadingDomainPolicy(ROOT / "config" / "domains.yaml", check_interval=0))
    blocked = decider.decide("malware.example")
    assert not blocked.allowed and blocked.domain_block_reason == "denylist"
    arxiv = decider.decide("www.arxiv.org")
    assert arxiv.allowed and arxiv.qps == 0.5 and arxiv.max_pages_per_day == 500
