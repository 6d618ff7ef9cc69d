"""Politeness for the web fetcher: the domain decision, a per-domain request rate, a daily page budget, robots.txt.

* :class:`DomainDecider` is what the fetcher asks before every request (every redirect hop too): whether the domain
  may be fetched at all and at what pace. :class:`lyra.services.domains.DomainGate` fits it (``decide(domain)``
  returns a ``DomainDecision``: ``allowed``, ``reason``, ``domain_block_reason``, ``qps``, ``max_pages_per_day``);
  :class:`PolicyDecider` answers from ``config/domains.yaml`` alone (denylist and politeness, no graph-held blocks)
  for callers without a graph.
* :class:`RequestSpacer` spaces requests to one domain at least ``1/qps`` seconds apart. :class:`RateLimiter` does
  it for every thread that shares it (one process); ``lyra.services.politeness.GraphRateLimiter`` for every process
  sharing a Neo4j database (the services' default).
* :class:`PageCounter` is the daily page budget. :class:`MemoryPageCounter` keeps the counts in the process;
  ``lyra.services.politeness.GraphPageCounter`` in Neo4j (the services' default), so the limit holds across
  processes and restarts.
* :class:`RobotsCache` keeps one parsed robots.txt (``protego``, RFC 9309) per scheme://host:port for
  ``ttl`` seconds. An unreachable robots.txt or a 5xx answer disallows the whole host for a short while; a
  4xx answer (no robots.txt) allows everything (RFC 9309 §2.3.1).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Protocol

from protego import Protego

from lyra.sources.domain_patterns import normalise_domain
from lyra.sources.domain_policy import ReloadingDomainPolicy

__all__ = [
    "DomainDecider",
    "DomainDecisionLike",
    "MemoryPageCounter",
    "PageCounter",
    "PolicyDecider",
    "PolicyDecision",
    "RateLimiter",
    "RequestSpacer",
    "RobotsAnswer",
    "RobotsCache",
]


class DomainDecisionLike(Protocol):
    """The parts of a domain decision the fetcher reads (``lyra.models.trust.DomainDecision`` has them all)."""

    @property
    def allowed(self) -> bool: ...
    @property
    def reason(self) -> str: ...
    @property
    def domain_block_reason(self) -> str | None: ...
    @property
    def qps(self) -> float: ...
    @property
    def max_pages_per_day(self) -> int: ...


class DomainDecider(Protocol):
    def decide(self, domain: str) -> DomainDecisionLike: ...


@dataclass(frozen=True)
class PolicyDecision:
    allowed: bool
    reason: str
    domain_block_reason: str | None
    qps: float
    max_pages_per_day: int


class PolicyDecider:
    """Decisions from ``config/domains.yaml`` only: the denylist blocks, politeness gives qps and the daily budget."""

    def __init__(self, policy: ReloadingDomainPolicy) -> None:
        self.policy = policy

    def decide(self, domain: str) -> PolicyDecision:
        name = normalise_domain(domain).removeprefix("www.")
        politeness = self.policy.politeness(name)
        deny = self.policy.denylist_match(name)
        if deny is not None:
            return PolicyDecision(
                False, f"on the denylist of config/domains.yaml ({deny})", "denylist", politeness.qps, 0
            )
        return PolicyDecision(True, "no block applies", None, politeness.qps, politeness.max_pages_per_day)


class RequestSpacer(Protocol):
    """What the fetcher asks before each request: block until a request to ``key`` may go out (returns the seconds
    waited). :class:`RateLimiter` (one process) and ``lyra.services.politeness.GraphRateLimiter`` (every process
    sharing a Neo4j database) fit."""

    def wait(self, key: str, min_interval: float) -> float: ...


class RateLimiter:
    """Per-key request spacing shared by threads: each call reserves the next free slot for its key, then sleeps
    until it (outside the lock, so other keys are not held up). A caller that wakes late (a loaded machine) pushes
    the next slot back, so released requests stay at least ``min_interval`` apart."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._next: dict[str, float] = {}

    def wait(self, key: str, min_interval: float) -> float:
        """Block until a request to ``key`` may go out; returns the seconds waited."""
        with self._lock:
            now = self._clock()
            slot = max(now, self._next.get(key, now))
            self._next[key] = slot + max(min_interval, 0.0)
        delay = slot - now
        if delay > 0:
            self._sleep(delay)
            with self._lock:
                released = self._clock()
                self._next[key] = max(self._next[key], released + max(min_interval, 0.0))
        return delay


class PageCounter(Protocol):
    def take(self, domain: str, limit: int, day: date) -> bool:
        """Count one page for ``domain`` on ``day`` unless ``limit`` pages were already counted; False then."""
        ...


class MemoryPageCounter:
    """:class:`PageCounter` in this process (lost at restart); days other than the latest are dropped."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._day: date | None = None
        self._counts: dict[str, int] = {}

    def take(self, domain: str, limit: int, day: date) -> bool:
        with self._lock:
            if day != self._day:
                self._day, self._counts = day, {}
            count = self._counts.get(domain, 0)
            if count >= limit:
                return False
            self._counts[domain] = count + 1
            return True

    def count(self, domain: str) -> int:
        with self._lock:
            return self._counts.get(domain, 0)


def utc_today() -> date:
    return datetime.now(UTC).date()


@dataclass(frozen=True)
class RobotsAnswer:
    allowed: bool
    reason: str
    crawl_delay: float | None = None


@dataclass(frozen=True)
class RobotsFile:
    """What fetching ``/robots.txt`` gave: ``status`` (None: unreachable) and the text when it is 2xx."""

    status: int | None
    text: str = ""
    detail: str = ""


_UNREACHABLE_TTL = 600.0


@dataclass
class _Entry:
    parser: Protego | None  # None: allow all (no robots.txt)
    disallow_all: str | None  # the reason when robots.txt could not be read (5xx, unreachable)
    expires: float


class RobotsCache:
    """Parsed robots.txt per origin; ``load(origin)`` fetches ``origin + "/robots.txt"`` (through the guarded,
    rate-limited fetcher) and is called at most once per origin and ``ttl`` at a time."""

    def __init__(
        self,
        load: Callable[[str], RobotsFile],
        agent: str,
        *,
        ttl: float = 3600.0,
        max_entries: int = 2048,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load = load
        self.agent = agent
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._loading: dict[str, threading.Lock] = {}

    def _entry(self, origin: str) -> _Entry:
        with self._lock:
            entry = self._entries.get(origin)
            if entry is not None and entry.expires > self._clock():
                self._entries.move_to_end(origin)
                return entry
            loading = self._loading.setdefault(origin, threading.Lock())
        with loading:  # one load per origin at a time; the others wait for its result
            with self._lock:
                entry = self._entries.get(origin)
                if entry is not None and entry.expires > self._clock():
                    return entry
            try:
                entry = self._fetch(origin)
            finally:
                with self._lock:
                    self._loading.pop(origin, None)
            with self._lock:
                self._entries[origin] = entry
                self._entries.move_to_end(origin)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
            return entry

    def _fetch(self, origin: str) -> _Entry:
        got = self._load(origin)
        now = self._clock()
        if got.status is None or got.status >= 500:
            why = f"HTTP {got.status}" if got.status is not None else (got.detail or "unreachable")
            return _Entry(None, f"robots.txt of {origin} could not be read ({why})", now + _UNREACHABLE_TTL)
        if got.status >= 400 or not (200 <= got.status < 300):
            return _Entry(None, None, now + self.ttl)
        return _Entry(Protego.parse(got.text), None, now + self.ttl)

    def check(self, origin: str, url: str) -> RobotsAnswer:
        entry = self._entry(origin)
        if entry.disallow_all is not None:
            return RobotsAnswer(False, entry.disallow_all + "; treated as disallowing the whole site (RFC 9309)")
        if entry.parser is None:
            return RobotsAnswer(True, "no robots.txt")
        delay = entry.parser.crawl_delay(self.agent)
        if entry.parser.can_fetch(url, self.agent):
            return RobotsAnswer(True, "allowed by robots.txt", delay)
        return RobotsAnswer(False, f"robots.txt of {origin} disallows it for {self.agent}", delay)
