"""Per-domain politeness shared by every worker of every process: the daily page budget and the request rate, both
held in Neo4j (decision record 0012: "qps and max_pages_per_day enforced across workers").

The job queue lives in Neo4j, so workers can be threads of one server, several servers on one machine, or servers
on several machines sharing one database. What they all share is Neo4j, so that is where the politeness state is:

* :class:`GraphPageCounter` — one ``(:DomainDay {key, domain, day, pages, refused})`` node per domain and UTC day;
  ``cypher/politeness/take_page.cypher`` counts a page only below the limit, atomically (the increment reads the
  value it writes under the node's write lock, an increment past the limit is taken back in the same transaction).
* :class:`GraphRateLimiter` — one ``(:DomainRate {domain, next_at, last_sent})`` node per domain, in two steps:
  ``reserve_slot.cypher`` moves ``next_at`` forward by ``1/qps`` under the node's lock and hands the caller its slot
  (so concurrent callers queue up in order and sleep, instead of polling); after the sleep ``confirm_send.cypher``
  sets ``last_sent`` to now only if the last request left at least ``1/qps`` ago (else the caller waits the rest and
  asks again). The confirmation is what keeps the spacing between the moments requests really leave when a caller
  wakes up late (measured: a sender 0.11 s late made the next gap 0.14 s at qps 4 without it). Times are epoch
  seconds of the callers' clocks: hosts sharing a database need synchronised clocks (NTP); a skew of *s* seconds
  can bring two requests of different hosts up to *s* seconds closer. The clock is read inside each attempt of
  the transaction (``GraphStore.run_fresh``): two confirmations of one domain can deadlock in Neo4j (both hold
  the node's shared lock and want its exclusive one; DeadlockDetected, rolled back), and the driver retries the
  loser after a back-off of about a second. Retried with the time of its first attempt, a confirmation recorded a
  send about a second in the past while the request left now, so the next caller was cleared right behind it (a
  CI run logged such a retry and a gap of 0.12 s at qps 4).

Why Neo4j rather than a file lock under the state folder: a file lock covers the processes of one machine only, and
costs about as much as the fetch it guards is cheap; one reservation is one small write transaction (its cost is
measured by ``tests/integration/web/test_shared_politeness.py`` and given in docs/web-fetch.md), negligible next to a
politeness interval of 0.2 s or more (qps ≤ 5 in ``config/domains.yaml``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import date

from lyra.graph.store import GraphStore

MAX_CONFIRMS = 100  # a slot is confirmed before the request goes out; bounded, however busy the domain


class GraphPageCounter:
    """A :class:`~lyra.sources.web.politeness.PageCounter` in Neo4j: the limit holds across processes and restarts."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store

    def take(self, domain: str, limit: int, day: date) -> bool:
        if limit <= 0:
            return False
        iso = day.isoformat()
        rows = self.store.run(
            "politeness/take_page", {"key": f"{domain}|{iso}", "domain": domain, "day": iso, "limit": limit}
        )
        return bool(rows and rows[0]["taken"])

    def counts(self, day: date) -> dict[str, int]:
        """Pages counted per domain on ``day``."""
        return {r["domain"]: r["pages"] for r in self.store.run("politeness/domain_days", {"day": day.isoformat()})}


class GraphRateLimiter:
    """A :class:`~lyra.sources.web.politeness.RateLimiter` whose slots are reserved in Neo4j (see the module)."""

    def __init__(
        self,
        store: GraphStore,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        lead: float = 0.05,
    ) -> None:
        self.store = store
        self._clock = clock
        self._sleep = sleep
        self.lead = lead

    def wait(self, key: str, min_interval: float) -> float:
        """Block until a request to ``key`` may go out; returns the seconds waited.

        The earliest slot asked for is ``lead`` seconds ahead of the clock: the reservation's own round trip takes
        some milliseconds, and a slot already past when the answer arrives would send late, leaving the next
        request (whose slot was counted from it) closer than ``min_interval`` to it. With the lead the caller
        sleeps until its slot and sends on time; only the first request after a pause waits the lead."""
        interval = max(min_interval, 0.0)
        start = self._clock()

        def at(lead: float) -> Callable[[], dict[str, object]]:
            # read the clock when the transaction runs, not when it was asked for: see GraphStore.run_fresh
            return lambda: {"domain": key, "now": self._clock() + lead, "interval": interval}

        slot = float(self.store.run_fresh("politeness/reserve_slot", at(self.lead))[0]["slot"])
        delay = slot - self._clock()
        if delay > 0:
            self._sleep(delay)
        for _ in range(MAX_CONFIRMS):  # normally the first answer is yes; a late neighbour makes us wait for it
            row = self.store.run_fresh("politeness/confirm_send", at(0.0))
            if row[0]["sent"]:
                break
            self._sleep(max(float(row[0]["last_sent"]) + interval - self._clock(), 0.001))
        return max(self._clock() - start, 0.0)
