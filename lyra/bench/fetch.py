"""Benchmark: the web fetcher on a local web of generated article pages — politeness off vs on, httpx vs chromium —
and where a page's time goes (fetch, extraction, then the ingest path with judging).

A real HTTP server on 127.0.0.1 serves ``pages`` articles spread over ``domains`` host names
(``siteNN.bench.lyra.test``, resolved to 127.0.0.1 by the fetcher's resolver, so every domain has its own politeness
state). The real
:class:`~lyra.sources.web.WebFetcher` reads them with ``workers`` threads, as job workers would:

* **httpx, politeness off**: robots.txt not read, no per-domain spacing, no daily budget;
* **httpx, politeness on**: the domain gate's settings (``config/domains.yaml``: qps 1 and 500 pages a day for an
  unlisted domain) and robots.txt — the spacing between two requests to one domain is measured from the server's
  log and printed next to the setting;
* **chromium, politeness off**: every page rendered by Debian's chromium through Playwright (``browser_pages`` of
  them; skipped when chromium is missing).

Then the documents of the first mode go through ``IngestService.ingest_documents`` into a throw-away task (one claim),
timed like :mod:`lyra.bench.citations`: embedding, judging, the rest. The task is cleaned up (hard) and the bench's
pages removed at the end.
"""

from __future__ import annotations

import random
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from pydantic import BaseModel, SecretStr

from lyra.bench.timing import IngestRate, measure_ingest
from lyra.bootstrap import build_services
from lyra.core.settings import Settings
from lyra.graph.connection import resolve_connection
from lyra.sources.local_files import SourceDocument
from lyra.sources.web import WebFetcher
from lyra.sources.web.fetcher import FetchOutcome
from lyra.sources.web.politeness import DomainDecider, DomainDecisionLike, PolicyDecision

TASK_ID = "bench_fetch"
CLAIM = "Regular aerobic exercise lowers blood pressure in adults"
DOMAIN_SUFFIX = "bench.lyra.test"
TOPICS = (
    ("aerobic exercise", "systolic blood pressure", "adults with hypertension"),
    ("brisk walking", "resting heart rate", "older adults"),
    ("strength training", "arterial stiffness", "middle-aged women"),
    ("cycling to work", "diastolic blood pressure", "office workers"),
    ("swimming", "blood lipids", "adults with obesity"),
)


def article_html(number: int, seed: int) -> bytes:
    """One generated article (deterministic for ``number`` and ``seed``): a title, a date and five paragraphs."""
    rng = random.Random(seed * 1_000_003 + number)
    activity, outcome, people = TOPICS[number % len(TOPICS)]
    year = 2005 + rng.randrange(20)
    paragraphs = []
    for k in range(5):
        n, weeks, change = rng.randrange(40, 900), rng.randrange(6, 52), rng.uniform(0.5, 12.0)
        direction = rng.choice(("lowered", "did not change", "slightly raised", "lowered"))
        paragraphs.append(
            f"<p>In study {number}-{k}, {n} {people} were assigned to {activity} or to usual care for {weeks} weeks. "
            f"The intervention {direction} {outcome} by {change:.1f} units compared with the control group, "
            f"and adherence was {rng.randrange(55, 98)} percent. The authors measured {outcome} at baseline, at "
            f"week {weeks // 2} and at the end, and adjusted for age, sex and body mass index.</p>"
        )
    return (
        f"<!doctype html><html><head><title>{activity.capitalize()} and {outcome}: report {number}</title>"
        f'<meta name="citation_publication_date" content="{year}/0{1 + number % 9}/1{number % 10}">'
        f"</head><body><nav><a href='/'>Home</a> <a href='/about'>About</a></nav><article>"
        f"<h1>{activity.capitalize()} and {outcome} in {people}</h1>{''.join(paragraphs)}</article>"
        f"<footer>Bench site {number}</footer></body></html>"
    ).encode()


@dataclass(frozen=True)
class Hit:
    time: float
    host: str
    path: str


class LocalWeb:
    """A threaded HTTP server on 127.0.0.1: ``/robots.txt`` (everything allowed) and ``/article/N``; logs requests."""

    def __init__(self, seed: int) -> None:
        web = self
        self.seed = seed
        self.hits: list[Hit] = []
        self._lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                host = (self.headers.get("Host") or "").split(":", 1)[0]
                with web._lock:
                    web.hits.append(Hit(time.monotonic(), host, self.path))
                if self.path == "/robots.txt":
                    body, kind = b"User-agent: *\nAllow: /\n", "text/plain"
                elif self.path.startswith("/article/") and self.path.removeprefix("/article/").isdigit():
                    body, kind = article_html(int(self.path.removeprefix("/article/")), web.seed), "text/html"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", f"{kind}; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="bench-web", daemon=True)

    def __enter__(self) -> LocalWeb:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def urls(self, pages: int, domains: int) -> list[str]:
        """Page addresses, domains interleaved (page i on domain i mod ``domains``)."""
        return [f"http://site{i % domains:02d}.{DOMAIN_SUFFIX}:{self.port}/article/{i}" for i in range(pages)]


def resolve_locally(host: str, port: int) -> list[str]:
    """The fetcher's resolver for the bench: every bench host name is 127.0.0.1."""
    if host.endswith(DOMAIN_SUFFIX) or host == "127.0.0.1":
        return ["127.0.0.1"]
    raise OSError(f"{host} is not a bench host")


class Unthrottled:
    """The gate's block decisions without politeness: no spacing, no daily budget."""

    def __init__(self, inner: DomainDecider) -> None:
        self.inner = inner

    def decide(self, domain: str) -> DomainDecisionLike:
        d = self.inner.decide(domain)
        return PolicyDecision(d.allowed, d.reason, d.domain_block_reason, 1e9, 10**9)


class FetchMode(BaseModel):
    name: str
    workers: int
    pages: int
    ok: int
    codes: dict[str, int]
    wall_seconds: float
    pages_per_second: float
    fetch_seconds: float  # summed over pages: network and robots.txt, politeness waits excluded
    wait_seconds: float  # summed: politeness (per-domain spacing)
    extract_seconds: float  # summed: trafilatura
    render_seconds: float  # summed: chromium rendering (the browser mode)
    min_gap_seconds: float | None  # shortest time between two page requests to one domain (server log)
    qps_setting: float | None  # the per-domain setting the gap is checked against (politeness on)


class FetchBenchResult(BaseModel):
    pages: int
    domains: int
    workers: int
    seed: int
    modes: list[FetchMode]
    ingest: IngestRate | None

    def share(self) -> dict[str, float]:
        """Per page, in the politeness-off httpx mode plus the ingest: fetch, extraction, ingest (judging apart)."""
        first = self.modes[0]
        g = self.ingest
        parts = {"fetch": first.fetch_seconds, "extraction": first.extract_seconds}
        if g is not None:
            parts["judging"] = g.seconds_judging
            parts["embedding"] = g.seconds_embedding
            parts["writes, dedup, ranking"] = g.seconds_other
        total = sum(parts.values()) or 1.0
        return {name: value / total for name, value in parts.items()}


def _min_gap(hits: Sequence[Hit]) -> float | None:
    by_host: dict[str, list[float]] = {}
    for hit in hits:
        if hit.path.startswith("/article/"):
            by_host.setdefault(hit.host, []).append(hit.time)
    gaps = [b - a for times in by_host.values() for a, b in zip(sorted(times), sorted(times)[1:], strict=False)]
    return min(gaps) if gaps else None


def _run_mode(
    name: str, fetcher: WebFetcher, web: LocalWeb, urls: Sequence[str], workers: int, qps: float | None
) -> tuple[FetchMode, list[FetchOutcome]]:
    logged = len(web.hits)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bench-fetch") as pool:
        outcomes = list(pool.map(fetcher.fetch, urls))
    wall = time.perf_counter() - start
    codes = Counter(o.code for o in outcomes)
    mode = FetchMode(
        name=name,
        workers=workers,
        pages=len(urls),
        ok=codes.get("ok", 0),
        codes=dict(codes),
        wall_seconds=wall,
        pages_per_second=len(urls) / wall if wall else 0.0,
        fetch_seconds=sum(o.fetch_seconds for o in outcomes),
        wait_seconds=sum(o.wait_seconds for o in outcomes),
        extract_seconds=sum(o.extract_seconds for o in outcomes),
        render_seconds=sum(o.render_seconds for o in outcomes),
        min_gap_seconds=_min_gap(web.hits[logged:]),
        qps_setting=qps,
    )
    return mode, outcomes


def run_fetch_bench(
    settings: Settings,
    pages: int = 200,
    domains: int = 10,
    workers: int = 2,
    *,
    browser_pages: int = 40,
    seed: int = 0,
    ingest: bool = True,
) -> FetchBenchResult:
    info, password = resolve_connection(settings)
    with tempfile.TemporaryDirectory(prefix="lyra-bench-") as state, LocalWeb(seed) as web:
        bench_settings = settings.model_copy(
            update={
                "state_dir": Path(state),  # empty FAISS index and caches
                "neo4j_uri": info.uri,
                "neo4j_username": info.username,
                "neo4j_password": SecretStr(password),
                "fetch_allow_hosts": ["127.0.0.1"],
                "web_browser": "off",
            }
        )
        services = build_services(bench_settings)
        urls = web.urls(pages, domains)
        try:
            gate = services.domains
            modes: list[FetchMode] = []
            off = bench_settings.model_copy(update={"web_robots_txt": False})
            with WebFetcher.from_settings(off, gate=Unthrottled(gate), resolver=resolve_locally) as fetcher:
                mode, outcomes = _run_mode("httpx, politeness off", fetcher, web, urls, workers, None)
                modes.append(mode)
            qps = gate.decide(f"site00.{DOMAIN_SUFFIX}").qps
            with WebFetcher.from_settings(bench_settings, gate=gate, resolver=resolve_locally) as fetcher:
                modes.append(_run_mode("httpx, politeness on", fetcher, web, urls, workers, qps)[0])
            if browser_pages and bench_settings.web.chromium_path.exists():
                browser = off.model_copy(update={"web_browser": "always"})
                with WebFetcher.from_settings(browser, gate=Unthrottled(gate), resolver=resolve_locally) as fetcher:
                    fetcher.fetch(urls[0])  # chromium's start, outside the timed run
                    subset = urls[1 : browser_pages + 1]
                    modes.append(_run_mode("chromium, politeness off", fetcher, web, subset, workers, None)[0])
            rate = None
            if ingest:
                if services.tasks.tasks.exists(TASK_ID):
                    services.cleanup.cleanup(TASK_ID, "hard")
                services.tasks.create_task(TASK_ID, CLAIM)
                documents: list[SourceDocument] = [o.document for o in outcomes if o.document is not None]
                services.models.embedder.embed(["warm-up"])  # model loads, outside the timed ingest
                services.models.nli.judge([(CLAIM, CLAIM)])
                rate = measure_ingest(services, documents, TASK_ID)
        finally:
            try:
                if services.tasks.tasks.exists(TASK_ID):
                    services.cleanup.cleanup(TASK_ID, "hard")
                services.store.run("cleanup/delete_pages_by_urls", {"urls": urls, "batch_size": 5000})
            finally:
                services.close()
    return FetchBenchResult(pages=pages, domains=domains, workers=workers, seed=seed, modes=modes, ingest=rate)
