"""The web fetcher against a real HTTP server on 127.0.0.1: extraction, SSRF refusals on redirects and at
connect time, limits, robots.txt, the domain gate and politeness. No mocks of httpx: real sockets throughout. Test
host names (``*.test``) are mapped to 127.0.0.1 by the fetcher's resolver hook, so each test has its own domain;
every address that is refused is a loopback one, so even a broken guard would send nothing off this machine."""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lyra.core.settings import Settings, load_settings
from lyra.sources.web import FetchOutcome, WebFetcher
from lyra.sources.web.ssrf import system_resolver
from tests.support.helpers import ROOT, stateful_site
from tests.support.pdf_maker import make_pdf

ARTICLE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Coffee and sleep | Journal of Tests</title>
<meta name="citation_title" content="Coffee intake and sleep quality">
<meta name="citation_doi" content="10.1234/jst.2021.5678">
<meta name="citation_publication_date" content="2021/03/15">
<meta name="citation_author" content="Jane Roe">
<meta name="citation_journal_title" content="Journal of Sleep Tests">
</head><body><nav><a href="/home">Home</a> <a href="/about">About</a></nav>
<article><h1>Coffee intake and sleep quality</h1>
<p>We studied 1,200 adults over two years and found that drinking coffee after 4 pm reduced total sleep time by
41 minutes on average. The effect was dose dependent and stronger in older participants, as earlier work had
suggested <a href="https://doi.org/10.1000/earlier">(Smith 2019)</a>.</p>
<p>Caffeine has a half-life of about five hours in healthy adults, so an afternoon cup still affects sleep at
bedtime. See also <a href="/articles/related">the related review</a> for a meta-analysis.</p>
<h2>References</h2>
<ol><li>Smith J, Brown K. Caffeine timing and sleep architecture in adults: a randomised trial. Journal of Sleep
Research. 2019;28(4):e12345. <a href="https://doi.org/10.1000/earlier">doi:10.1000/earlier</a></li>
<li>Doe A, Lee M. Evening light, caffeine and the circadian phase of older adults. Sleep Medicine.
2018;45:77-84. <a href="https://example.org/paper1">Full text</a></li>
<li>Garcia R. Half-life of caffeine across age groups: pooled pharmacokinetic data. Clinical Pharmacology.
2017;12:100-109. <a href="../papers/garcia2017.pdf">PDF</a></li></ol>
</article><footer><a href="/privacy">Privacy policy</a></footer></body></html>"""

PDF_TEXT = (
    "Caffeine taken within six hours of bedtime reduced total sleep time by more than one hour in a "
    "randomised crossover trial of sixteen healthy sleepers."
)
APP_PAGE = """<!DOCTYPE html><html><head><title>Sleep app</title></head>
<body><div id="app">Loading…</div><script src="/app.js"></script></body></html>"""
APP_PARAGRAPHS = [
    "Rendered in the browser: a cohort of 3,400 shift workers slept 52 minutes less on night-shift days than on "
    "free days, and the deficit was not recovered on the following rest day.",
    "Workers who napped for twenty minutes before a night shift reported fewer attention lapses, although the "
    "nap did not change the total amount of sleep over the week.",
    "The authors conclude that rotating schedules should leave at least two free days after a block of nights.",
]
APP_JS = """
fetch("http://blocked.test:PORT/beacon").catch(() => {});
fetch("http://127.0.0.2:PORT/internal").catch(() => {});
new Image().src = "/pixel.png";
fetch("/content.json").then(r => r.json()).then(data => {
  const app = document.getElementById("app");
  app.innerHTML = "<article><h1>Night shifts and sleep</h1>" +
    data.paragraphs.map(p => "<p>" + p + "</p>").join("") + "</article>";
});
"""
CAPTCHA_PAGE = """<!DOCTYPE html><html><head><title>Security check</title>
<script src="https://www.google.com/recaptcha/api.js"></script></head><body><h1>One more step</h1>
<form action="/verify"><div class="g-recaptcha" data-sitekey="6Lc-test"></div><button>Continue</button></form>
</body></html>"""
CLOUDFLARE_PAGE = """<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>
<h2>Checking if the site connection is secure</h2><div class="cf-turnstile" data-sitekey="0x4AAA"></div>
<script>window._cf_chl_opt = {cType: 'managed'};</script></body></html>"""
DOMAINS_YAML = """
politeness:
  default: {qps: 100.0, max_pages_per_day: 500}
  domains:
    - {domain: "polite.test", qps: 2.0}
    - {domain: "budget.test", max_pages_per_day: 2}
"""


@dataclass(frozen=True)
class Hit:
    at: float
    host: str
    path: str
    user_agent: str
    cookie: str | None = None


@dataclass
class Site:
    """The test server: every request is logged (monotonic time, Host without port, path)."""

    port: int
    hits: list[Hit] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)  # bytes a streaming route managed to send

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"

    def requests(self, host: str) -> list[str]:
        return [h.path for h in self.hits if h.host == host]


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def _redirect(self, location: str) -> None:
            self._send(302, b"", "text/plain", {"Location": location})

        def do_GET(self) -> None:
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
            site.hits.append(
                Hit(time.monotonic(), host, self.path, self.headers.get("User-Agent") or "", self.headers.get("Cookie"))
            )
            path = self.path
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._route(host, path)

        def _route(self, host: str, path: str) -> None:
            port = site.port
            if path == "/robots.txt":
                if host == "robots.test":
                    self._send(200, b"User-agent: *\nDisallow: /private/\n", "text/plain")
                else:
                    self._send(404, b"no robots.txt here", "text/plain")
            elif path.startswith("/articles/"):
                self._send(200, ARTICLE.encode(), "text/html; charset=utf-8")
            elif path == "/paper.pdf":
                pdf = make_pdf([PDF_TEXT], title="Caffeine and sleep", author="R. Doe", created="D:20190611093000Z")
                self._send(200, pdf, "application/pdf")
            elif path == "/download":
                self._send(200, make_pdf([PDF_TEXT]), "application/octet-stream")
            elif path == "/app":
                self._send(200, APP_PAGE.encode(), "text/html; charset=utf-8")
            elif path == "/app.js":
                self._send(200, APP_JS.replace("PORT", str(port)).encode(), "application/javascript")
            elif path == "/content.json":
                self._send(200, json.dumps({"paragraphs": APP_PARAGRAPHS}).encode(), "application/json")
            elif path == "/data.json":
                self._send(200, b'{"a": 1}', "application/json")
            elif path == "/wall/captcha":
                self._send(200, CAPTCHA_PAGE.encode(), "text/html; charset=utf-8")
            elif path == "/wall/cloudflare":
                self._send(403, CLOUDFLARE_PAGE.encode(), "text/html; charset=utf-8")
            elif path == "/forbidden":
                self._send(403, b"<html><body><h1>403 Forbidden</h1></body></html>", "text/html")
            elif path == "/missing":
                self._send(404, b"not here", "text/html")
            elif path.startswith("/to/"):  # /to/<where>: a redirect
                where = path.removeprefix("/to/")
                targets = {
                    "loopback2": f"http://127.0.0.2:{port}/articles/x",
                    "decimal": f"http://2130706434:{port}/articles/x",
                    "ipv6": f"http://[::1]:{port}/articles/x",
                    "mapped": f"http://[::ffff:127.0.0.2]:{port}/articles/x",
                    "name": f"http://internal.test:{port}/articles/x",
                    "same": "/articles/after-redirect",
                    "blocked": f"http://blocked.test:{port}/articles/x",
                    "file": "file:///etc/passwd",
                    "cross": f"http://other.test:{port}/articles/x",
                }
                self._redirect(targets[where])
            elif path.startswith("/loop/"):
                n = int(path.rsplit("/", 1)[1])
                self._redirect(f"/loop/{n + 1}")
            elif path == "/huge":  # no Content-Length: 50 MB in 64 KiB chunks, streamed until the client stops
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Connection", "close")
                self.end_headers()
                chunk = b"<p>" + b"x" * 65_530 + b"</p>"
                sent = 0
                site.sent["huge"] = 0
                for _ in range(800):
                    self.wfile.write(chunk)
                    sent += len(chunk)
                    site.sent["huge"] = sent
            elif path == "/huge-declared":
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(50_000_000))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(b"<html>" + b"x" * 10_000)
            elif path == "/slow":
                time.sleep(3)
                self._send(200, ARTICLE.encode(), "text/html")
            elif path == "/drip":
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Connection", "close")
                self.end_headers()
                for _ in range(30):
                    self.wfile.write(b"<p>drip</p>\n")
                    self.wfile.flush()
                    time.sleep(0.2)
            else:
                self._send(404, b"unknown", "text/plain")

    return Handler


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client hanging up (the fetcher stopping a huge download, a keep-alive connection closed) is normal


@pytest.fixture
def site() -> Iterator[Site]:
    with stateful_site(Site, _handler, _Server) as state:
        yield state


def test_resolver(host: str, port: int) -> list[str]:
    """``*.test`` names are this machine; ``internal.test`` is another loopback address (not allowed)."""
    if host == "internal.test":
        return ["127.0.0.2"]
    if host.endswith(".test"):
        return ["127.0.0.1"]
    if host in ("127.0.0.1", "localhost"):
        return system_resolver(host, port)
    raise OSError(f"no network in tests: {host}")


test_resolver.__test__ = False  # type: ignore[attr-defined]


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "config"
    folder.mkdir()
    shipped = (ROOT / "config" / "domains.yaml").read_text(encoding="utf-8")
    head, _, rest = shipped.partition("\npoliteness:")
    tail = rest[rest.index("\n# Domains Lyra never fetches") :]
    text = head + DOMAINS_YAML + tail.replace('  - "malware.example"', '  - "blocked.test"\n  - "malware.example"')
    (folder / "domains.yaml").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def make_fetcher(config_dir: Path) -> Iterator[Callable[..., WebFetcher]]:
    made: list[WebFetcher] = []

    def build(**overrides: object) -> WebFetcher:
        values: dict[str, object] = {
            "config_dir": config_dir,
            "fetch_allow_hosts": ["127.0.0.1"],
            "web_timeout_seconds": 1.5,
            "web_max_bytes": 1_000_000,
            "web_max_redirects": 3,
            "web_contact": "mailto:lyra-tests@example.org",
        }
        values.update(overrides)
        settings: Settings = load_settings(**values)
        fetcher = WebFetcher.from_settings(settings, resolver=test_resolver)
        made.append(fetcher)
        return fetcher

    yield build
    for fetcher in made:
        fetcher.close()


# ----------------------------------------------------------------------------- extraction
def test_an_article_page_gives_its_text_title_year_doi_author_and_the_links_of_its_main_content(
    site: Site, make_fetcher: Callable[..., WebFetcher]
) -> None:
    outcome = make_fetcher().fetch(site.url("journal.test", "/articles/coffee"))
    assert outcome.code == "ok", outcome.reason
    doc = outcome.document
    assert doc is not None
    assert doc.url == outcome.final_url == site.url("journal.test", "/articles/coffee")
    assert doc.page_type == "web" and doc.extraction_method == "trafilatura"
    assert doc.title == "Coffee intake and sleep quality"
    assert doc.year == 2021 and doc.doi == "10.1234/jst.2021.5678" and doc.author == "Jane Roe"
    assert doc.venue == "Journal of Sleep Tests"
    text = " ".join(doc.text.split())
    assert "reduced total sleep time by 41 minutes" in text
    assert "Garcia R. Half-life of caffeine" in text  # the reference list is part of the text
    assert "Privacy policy" not in doc.text and "](" not in doc.text  # no boilerplate, no markdown links
    assert doc.raw is not None and '<meta name="citation_doi"' in doc.raw  # the source, for the injection scan
    links = {(link.href, link.text) for link in outcome.links}
    assert ("https://doi.org/10.1000/earlier", "(Smith 2019)") in links
    assert ("https://doi.org/10.1000/earlier", "doi:10.1000/earlier") in links
    assert (site.url("journal.test", "/articles/related"), "the related review") in links
    assert (site.url("journal.test", "/papers/garcia2017.pdf"), "PDF") in links  # ../ resolved to absolute
    assert not any(href.endswith(("/home", "/privacy")) for href, _ in links)  # navigation is not main content
    assert outcome.fetch_seconds > 0 and outcome.extract_seconds > 0 and outcome.bytes_read == len(ARTICLE.encode())
    assert site.requests("journal.test") == ["/robots.txt", "/articles/coffee"]


def test_the_user_agent_names_lyra_and_the_contact(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    make_fetcher().fetch(site.url("journal.test", "/articles/ua"))
    agents = {hit.user_agent for hit in site.hits}
    assert len(agents) == 1
    agent = agents.pop()
    assert agent.startswith("Lyra/") and "mailto:lyra-tests@example.org" in agent


def test_a_pdf_is_read_with_its_title_author_and_year(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    outcome = make_fetcher().fetch(site.url("journal.test", "/paper.pdf"))
    assert outcome.code == "ok", outcome.reason
    doc = outcome.document
    assert doc is not None and doc.page_type == "pdf" and doc.extraction_method == "pypdf"
    assert doc.title == "Caffeine and sleep" and doc.author == "R. Doe" and doc.year == 2019
    assert "randomised crossover trial of sixteen" in " ".join(doc.text.split())
    assert outcome.content_type == "application/pdf"


def test_an_unlabelled_download_is_sniffed_as_pdf(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    outcome = make_fetcher().fetch(site.url("journal.test", "/download"))
    assert outcome.code == "ok", outcome.reason
    assert outcome.document is not None and outcome.document.page_type == "pdf"


def test_another_content_type_is_skipped_with_the_reason_and_not_downloaded(
    site: Site, make_fetcher: Callable[..., WebFetcher]
) -> None:
    outcome = make_fetcher().fetch(site.url("journal.test", "/data.json"))
    assert outcome.code == "unsupported_type" and outcome.document is None
    assert "application/json" in outcome.reason
    assert outcome.bytes_read == 0


def test_an_http_error_is_reported_with_its_status(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    outcome = make_fetcher().fetch(site.url("journal.test", "/missing"))
    assert outcome.code == "http_error" and outcome.status == 404


# ----------------------------------------------------------------------------- SSRF
def test_loopback_is_refused_without_the_allow_list_and_nothing_is_sent(
    site: Site, make_fetcher: Callable[..., WebFetcher]
) -> None:
    fetcher = make_fetcher(fetch_allow_hosts=[])
    for url in (
        f"http://127.0.0.1:{site.port}/articles/a",
        f"http://localhost:{site.port}/articles/a",
        site.url("journal.test", "/articles/a"),  # a name that resolves to loopback
        f"http://2130706433:{site.port}/articles/a",
        f"http://0x7f.1:{site.port}/articles/a",
    ):
        outcome = fetcher.fetch(url)
        assert outcome.code == "ssrf_refused", (url, outcome.reason)
        assert "127.0.0.1 is a loopback address" in outcome.reason
    assert site.hits == []


@pytest.mark.parametrize("where", ["loopback2", "decimal", "ipv6", "mapped", "name"])
def test_a_redirect_to_an_address_outside_the_allow_list_is_refused_though_the_first_host_is_allowed(
    site: Site, make_fetcher: Callable[..., WebFetcher], where: str
) -> None:
    outcome = make_fetcher().fetch(site.url("journal.test", f"/to/{where}"))
    assert outcome.code == "ssrf_refused", outcome.reason
    assert "loopback" in outcome.reason
    assert outcome.redirects and outcome.final_url == outcome.redirects[-1]
    assert [h.path for h in site.hits] == ["/robots.txt", f"/to/{where}"]  # the target was never asked


def test_a_redirect_to_another_scheme_is_refused(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    outcome = make_fetcher().fetch(site.url("journal.test", "/to/file"))
    assert outcome.code == "invalid_url" and "only http and https" in outcome.reason


def test_a_redirect_on_the_same_host_is_followed(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    outcome = make_fetcher().fetch(site.url("journal.test", "/to/same"))
    assert outcome.code == "ok"
    assert outcome.final_url == site.url("journal.test", "/articles/after-redirect")
    assert outcome.document is not None and outcome.document.url == outcome.final_url


def test_the_connection_goes_only_to_an_address_checked_at_connect_time(site: Site, config_dir: Path) -> None:
    """DNS rebinding: the fetcher's first lookup (before anything is sent) gets an allowed answer, the lookup made
    for the connection gets another address: the connection-time check refuses it and nothing reaches a server."""
    calls: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return ["127.0.0.1"] if len(calls) % 2 == 1 else ["127.0.0.2"]

    settings = load_settings(config_dir=config_dir, fetch_allow_hosts=["127.0.0.1"], web_robots_txt=False)
    with WebFetcher.from_settings(settings, resolver=rebinding) as fetcher:
        outcome = fetcher.fetch(site.url("rebind.test", "/articles/one"))
    assert outcome.code == "ssrf_refused", outcome.reason
    assert "127.0.0.2 is a loopback address" in outcome.reason
    assert calls == ["rebind.test", "rebind.test"]
    assert site.hits == []


# ----------------------------------------------------------------------------- limits
def test_a_redirect_loop_ends_as_too_many_redirects(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    outcome = make_fetcher(web_max_redirects=3).fetch(site.url("journal.test", "/loop/0"))
    assert outcome.code == "too_many_redirects"
    assert site.requests("journal.test") == ["/robots.txt", "/loop/0", "/loop/1", "/loop/2", "/loop/3"]
    assert len(outcome.redirects) == 4


def test_a_huge_page_is_too_large_and_reading_stops_early(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    outcome = make_fetcher().fetch(site.url("journal.test", "/huge"))
    assert outcome.code == "too_large", outcome.reason
    assert 1_000_000 < outcome.bytes_read < 1_200_000
    time.sleep(0.3)
    assert site.sent["huge"] < 20_000_000  # the server could not push its 50 MB: the client hung up


def test_a_declared_size_above_the_limit_is_refused_before_reading(
    site: Site, make_fetcher: Callable[..., WebFetcher]
) -> None:
    outcome = make_fetcher().fetch(site.url("journal.test", "/huge-declared"))
    assert outcome.code == "too_large" and "Content-Length" in outcome.reason
    assert outcome.bytes_read == 0


@pytest.mark.parametrize("path", ["/slow", "/drip"])
def test_a_slow_page_times_out(site: Site, make_fetcher: Callable[..., WebFetcher], path: str) -> None:
    start = time.monotonic()
    outcome = make_fetcher(web_timeout_seconds=1.0).fetch(site.url("journal.test", path))
    elapsed = time.monotonic() - start
    assert outcome.code == "timeout", outcome.reason
    assert elapsed < 2.0


# ----------------------------------------------------------------------------- politeness
def test_robots_txt_is_honoured_and_read_once_per_host(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    fetcher = make_fetcher()
    refused = fetcher.fetch(site.url("robots.test", "/private/page"))
    assert refused.code == "robots_disallowed" and "robots.txt" in refused.reason
    allowed = fetcher.fetch(site.url("robots.test", "/articles/open"))
    assert allowed.code == "ok"
    assert site.requests("robots.test") == ["/robots.txt", "/articles/open"]


@pytest.mark.parametrize(
    "overrides", [{"web_robots_txt": False}, {"web_robots_ignore_domains": ["robots.test"]}], ids=["off", "domain"]
)
def test_robots_txt_can_be_turned_off_globally_or_for_a_domain(
    site: Site, make_fetcher: Callable[..., WebFetcher], overrides: dict[str, object]
) -> None:
    outcome = make_fetcher(**overrides).fetch(site.url("robots.test", "/private/page"))
    assert outcome.code == "http_error" and outcome.status == 404  # fetched: the server has no such page
    assert site.requests("robots.test") == ["/private/page"]


def test_a_blocked_domain_is_never_contacted(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    outcome = make_fetcher().fetch(site.url("blocked.test", "/articles/a"))
    assert outcome.code == "blocked_domain" and "denylist" in outcome.reason
    assert site.hits == []


def test_a_redirect_into_a_blocked_domain_is_refused(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    outcome = make_fetcher().fetch(site.url("journal.test", "/to/blocked"))
    assert outcome.code == "blocked_domain"
    assert outcome.final_url == site.url("blocked.test", "/articles/x")
    assert site.requests("blocked.test") == []


def test_the_daily_page_budget_of_a_domain_is_enforced(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    fetcher = make_fetcher()
    codes = [fetcher.fetch(site.url("budget.test", f"/articles/{i}")).code for i in range(3)]
    assert codes == ["ok", "ok", "daily_limit"]
    assert site.requests("budget.test") == ["/robots.txt", "/articles/0", "/articles/1"]


def test_requests_to_one_domain_keep_to_its_qps_across_threads(
    site: Site, make_fetcher: Callable[..., WebFetcher]
) -> None:
    fetcher = make_fetcher(web_timeout_seconds=10.0)
    outcomes: list[FetchOutcome] = []

    def worker(i: int) -> None:
        for j in range(2):
            outcomes.append(fetcher.fetch(site.url("polite.test", f"/articles/{i}-{j}")))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [o.code for o in outcomes] == ["ok"] * 6
    stamps = sorted(hit.at for hit in site.hits if hit.host == "polite.test")
    assert len(stamps) == 7  # robots.txt and six pages
    # qps 2: never three requests within one second (a little slack for the server's clock reading)
    assert all(later - earlier >= 0.95 for earlier, later in zip(stamps, stamps[2:], strict=False))
    assert stamps[-1] - stamps[0] >= 2.9
    assert sum(o.wait_seconds for o in outcomes) > 0


def test_other_domains_are_not_held_up_by_a_slow_domain(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    fetcher = make_fetcher()
    start = time.monotonic()
    for i in range(5):
        assert fetcher.fetch(site.url("fast.test", f"/articles/{i}")).code == "ok"
    assert time.monotonic() - start < 3.0


@pytest.mark.neo4j
def test_the_real_domain_gate_blocks_a_denylisted_domain(
    graph: object, site: Site, config_dir: Path, tmp_path: Path
) -> None:
    from lyra.bootstrap import Services
    from lyra.services.domains import DomainGate
    from lyra.sources.domain_policy import ReloadingDomainPolicy

    assert isinstance(graph, Services)
    policy = config_dir / "domains.yaml"
    shutil.copy(policy, tmp_path / "gate.yaml")
    gate = DomainGate(
        graph.store, ReloadingDomainPolicy(tmp_path / "gate.yaml", check_interval=0), graph.settings.trust
    )
    settings = load_settings(config_dir=config_dir, fetch_allow_hosts=["127.0.0.1"], web_timeout_seconds=2.0)
    with WebFetcher.from_settings(settings, gate, resolver=test_resolver) as fetcher:
        assert fetcher.fetch(site.url("blocked.test", "/articles/a")).code == "blocked_domain"
        ok = fetcher.fetch(site.url("journal.test", "/articles/a"))
        assert ok.code == "ok", ok.reason
    assert site.requests("blocked.test") == []


@pytest.mark.browser
def test_a_script_built_page_is_rendered_in_chromium_and_every_browser_request_goes_through_the_fetcher(
    site: Site, make_fetcher: Callable[..., WebFetcher]
) -> None:
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")
    plain = make_fetcher().fetch(site.url("spa.test", "/app"))
    assert plain.document is None or "52 minutes" not in plain.document.text  # not without a browser
    site.hits.clear()
    outcome = make_fetcher(web_browser="auto", web_timeout_seconds=20.0).fetch(site.url("spa.test", "/app"))
    assert outcome.code == "ok", outcome.reason
    assert outcome.rendered and outcome.document is not None
    assert outcome.document.extraction_method == "trafilatura+browser"
    text = " ".join(outcome.document.text.split())
    assert "slept 52 minutes less on night-shift days" in text
    assert "<article>" in (outcome.document.raw or "")  # raw is the rendered DOM: scanned like any source
    paths = site.requests("spa.test")
    assert paths.count("/app") == 1  # the page is fetched once and handed to the browser as fetched
    assert {"/app.js", "/content.json"} <= set(paths)
    assert "/pixel.png" not in paths  # images are not loaded
    assert site.requests("blocked.test") == []  # the gate applies to the browser's requests too
    assert all(hit.user_agent.startswith("Lyra/") for hit in site.hits)  # all of them came through the fetcher


# ----------------------------------------------------------------------------- walls and cookies
@pytest.mark.parametrize(("path", "status"), [("/wall/captcha", 200), ("/wall/cloudflare", 403)])
def test_a_captcha_page_is_needs_intervention_and_never_extracted(
    site: Site, make_fetcher: Callable[..., WebFetcher], path: str, status: int
) -> None:
    outcome = make_fetcher().fetch(site.url("journal.test", path))
    assert outcome.code == "needs_intervention", outcome.reason
    assert outcome.challenge is not None and outcome.challenge.kind == "captcha"
    assert outcome.document is None and outcome.status == status and outcome.extract_seconds == 0.0
    assert "resolve_auth" in outcome.reason


def test_a_plain_403_stays_an_http_error(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    outcome = make_fetcher().fetch(site.url("journal.test", "/forbidden"))
    assert outcome.code == "http_error" and outcome.status == 403 and outcome.challenge is None


def test_a_cookie_goes_to_its_domain_and_subdomains_only(site: Site, make_fetcher: Callable[..., WebFetcher]) -> None:
    fetcher = make_fetcher()
    cookies = {"journal.test": "pass=k1"}
    assert fetcher.fetch(site.url("journal.test", "/to/cross"), cookies=cookies).code == "ok"
    assert fetcher.fetch(site.url("sub.journal.test", "/articles/s"), cookies=cookies).code == "ok"
    assert fetcher.fetch(site.url("notjournal.test", "/articles/n"), cookies=cookies).code == "ok"
    assert fetcher.fetch(site.url("journal.test", "/articles/plain")).code == "ok"
    sent = {(h.host, h.path): h.cookie for h in site.hits}
    assert sent[("journal.test", "/to/cross")] == "pass=k1"
    assert sent[("other.test", "/articles/x")] is None  # the redirect left the domain: no cookie
    assert sent[("sub.journal.test", "/articles/s")] == "pass=k1"
    assert sent[("notjournal.test", "/articles/n")] is None
    assert sent[("journal.test", "/articles/plain")] is None  # only the fetch that was given it
    assert all(h.cookie is None for h in site.hits if h.path == "/robots.txt")
