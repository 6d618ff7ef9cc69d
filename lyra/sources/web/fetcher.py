""":class:`WebFetcher`: the one way Lyra reads a URL. See :mod:`lyra.sources.web` for the rules it applies."""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Literal, Protocol, runtime_checkable
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx

from lyra.core.errors import InvalidInputError
from lyra.core.settings import Settings, WebSettings
from lyra.sources.domain_patterns import normalise_domain, pattern_matches
from lyra.sources.domain_policy import ReloadingDomainPolicy
from lyra.sources.local_files import SourceDocument
from lyra.sources.web.browser import ChromiumRenderer
from lyra.sources.web.challenge import Challenge, detect_challenge
from lyra.sources.web.extract import Extracted, Link, decode_html, extract_html, extract_pdf
from lyra.sources.web.politeness import (
    DomainDecider,
    MemoryPageCounter,
    PageCounter,
    PolicyDecider,
    RateLimiter,
    RequestSpacer,
    RobotsCache,
    RobotsFile,
    utc_today,
)
from lyra.sources.web.ssrf import AddressPolicy, AddressRefused, GuardedTransport, Resolver, system_resolver
from lyra.sources.web.types import PageRenderer, RawResponse

log = logging.getLogger(__name__)

__all__ = [
    "FetchCode",
    "FetchOutcome",
    "FetchRefused",
    "PageRenderer",
    "RawResponse",
    "Revalidation",
    "WebFetcher",
    "content_hash",
    "origin_of",
]

FetchCode = Literal[
    "ok",
    "invalid_url",
    "ssrf_refused",
    "blocked_domain",
    "blocked_page",
    "robots_disallowed",
    "daily_limit",
    "too_large",
    "timeout",
    "unsupported_type",
    "too_many_redirects",
    "http_error",
    "network_error",
    "no_text",
    "bad_pdf",
    "extraction_failed",
    "needs_intervention",
]


@runtime_checkable
class PageBlocks(Protocol):
    """A gate that also blocks single pages (``DomainGate`` fits): why a URL may not be fetched, or None."""

    def page_block_reason(self, url: str) -> str | None: ...


REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf", "application/acrobat"})
SNIFF_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/download"})
ROBOTS_MAX_BYTES = 512_000  # RFC 9309: parse at least 500 KiB
MAX_CRAWL_DELAY = 30.0  # a robots.txt Crawl-delay above this is capped
ACCEPT = "text/html,application/xhtml+xml,application/pdf;q=0.9,*/*;q=0.1"
CHALLENGE_STATUSES = frozenset({401, 403, 429, 503})  # answers whose HTML is read to tell a wall from an error
CHALLENGE_MAX_BYTES = 1_000_000  # most bytes of such an answer read


@dataclass(frozen=True)
class FetchOutcome:
    """What fetching one URL gave: a document (``code == "ok"``) or why not (``code`` and ``reason``).

    ``links``: the links of the main content (absolute http(s) URLs with anchor text) for a later citation step.
    ``fetch_seconds`` covers the network (robots.txt and redirects included), ``wait_seconds`` the politeness waits,
    ``render_seconds`` chromium's rendering (its subresource requests included), ``extract_seconds`` the text
    extraction; none of them includes another.
    """

    url: str
    code: FetchCode
    reason: str
    document: SourceDocument | None = None
    final_url: str | None = None
    status: int | None = None
    content_type: str | None = None
    links: tuple[Link, ...] = ()
    redirects: tuple[str, ...] = ()
    fetch_seconds: float = 0.0
    extract_seconds: float = 0.0
    wait_seconds: float = 0.0
    render_seconds: float = 0.0
    bytes_read: int = 0
    rendered: bool = False  # the HTML came from the browser
    challenge: Challenge | None = None  # code needs_intervention: the CAPTCHA / login / consent wall found
    etag: str | None = None  # the answer's validators (code ok), kept on the page for a later conditional GET
    last_modified: str | None = None
    content_hash: str | None = None  # sha256 of the body as fetched (code ok)

    @property
    def ok(self) -> bool:
        return self.document is not None


RevalidationCode = Literal["not_modified", "same_hash", "changed", "failed"]


@dataclass(frozen=True)
class Revalidation:
    """What a conditional GET of a known page said (:meth:`WebFetcher.revalidate`, docs/concepts/living-evidence.md).

    ``code``: ``not_modified`` (HTTP 304: nothing read), ``same_hash`` (a 2xx whose body hashes as before),
    ``changed`` (a 2xx with another body, or the first hash of a page that had none), ``failed`` (refused or an error:
    ``failure`` is the fetcher's :data:`FetchCode`). ``etag`` / ``last_modified`` / ``content_hash``: what to keep on
    the page now (the new answer's validators; a 304's or a failure's leave the stored ones)."""

    url: str
    code: RevalidationCode
    reason: str
    status: int | None = None
    etag: str | None = None
    last_modified: str | None = None
    content_hash: str | None = None
    failure: FetchCode | None = None
    bytes_read: int = 0


def content_hash(body: bytes) -> str:
    """The content hash kept on a page: sha256 of the body exactly as fetched."""
    return hashlib.sha256(body).hexdigest()


def _validators(response: RawResponse) -> tuple[str | None, str | None]:
    etag = response.headers.get("etag", "").strip() or None
    modified = response.headers.get("last-modified", "").strip() or None
    return etag, modified


class FetchRefused(Exception):
    """A request the fetcher refused or that failed (:meth:`WebFetcher.get`): ``code`` is a :data:`FetchCode`,
    ``reason`` says why, ``status`` is the HTTP status when there was one, ``response`` the refused answer when its
    HTML was read (a CAPTCHA or login wall behind a 401/403/429/503)."""

    def __init__(
        self, code: FetchCode, reason: str, status: int | None = None, response: RawResponse | None = None
    ) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason
        self.status = status
        self.response = response  # the answer refused (an HTTP error whose HTML was read), when there is one


_Refused = FetchRefused
# A search endpoint the operator configured may live on an intranet or this machine: requests to exactly that
# origin accept any address (every other request, its redirects elsewhere included, is checked as usual)
_TRUST_ANY_ADDRESS = AddressPolicy(allow_networks=(ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")))


@dataclass
class _Trace:
    """What one fetch did so far (filled in while the hops run)."""

    deadline: float
    wait_seconds: float = 0.0
    render_seconds: float = 0.0
    bytes_read: int = 0
    hops: list[str] = field(default_factory=list)
    cookies: Mapping[str, str] = field(default_factory=dict)  # domain -> Cookie header value (secrets: never logged)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower().rpartition("@")[2], "", "", ""))


def _domain_of(url: str) -> str:
    try:
        return normalise_domain(urlsplit(url).hostname or "").removeprefix("www.")
    except (ValueError, InvalidInputError):
        return ""


def cookie_for(cookies: Mapping[str, str], url: str) -> str | None:
    """The Cookie header value given for ``url``'s domain or a parent domain of it (the longest match)."""
    if not cookies:
        return None
    domain = _domain_of(url)
    best: str | None = None
    for name in cookies:
        if domain == name or domain.endswith("." + name):
            best = name if best is None or len(name) > len(best) else best
    return cookies[best] if best is not None else None


def _default_port(scheme: str) -> int:
    return 443 if scheme.lower() == "https" else 80


def origin_of(url: str) -> str:
    """``scheme://host:port`` of ``url`` with the port always written (the default one too), lowercase; ``""``
    for a URL without a host or with a bad port."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return ""
    if not parts.hostname or parts.scheme.lower() not in ("http", "https"):
        return ""
    host = parts.hostname.lower().rstrip(".")
    shown = f"[{host}]" if ":" in host else host
    return f"{parts.scheme.lower()}://{shown}:{port or _default_port(parts.scheme)}"


def _no_cookies() -> CookieJar:
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


def user_agent(settings: WebSettings, contact_email: str | None = None) -> str:
    """The User-Agent: LYRA_WEB_USER_AGENT naming LYRA_WEB_CONTACT (else LYRA_CONTACT_EMAIL) for site owners."""
    contact_value = settings.web_contact or contact_email
    contact = f"; +{contact_value}" if contact_value else ""
    base = settings.web_user_agent.strip()
    if contact and base.endswith(")"):
        return base[:-1] + contact + ")"
    return base + (f" (+{contact_value})" if contact_value else "")


class WebFetcher:
    """Fetches URLs for Lyra: SSRF guard, domain gate, robots.txt, per-domain rate and daily budget, size and time
    limits, redirects re-checked hop by hop, HTML and PDF extraction. Thread-safe: one fetcher serves every worker
    thread of a process, so its rate limiter and caches are shared (build it once, in the composition root).

    ``gate``: the domain decision (``DomainGate`` fits); None: ``config/domains.yaml`` alone (:class:`PolicyDecider`).
    ``resolver``: host name -> addresses (tests map their own names to 127.0.0.1). ``renderer``: a browser backend
    for pages that need one; None: chromium (:class:`~lyra.sources.web.browser.ChromiumRenderer`) when
    ``LYRA_WEB_BROWSER`` is ``auto`` or ``always``, else HTML is used as fetched. ``contact_email``: named in the
    User-Agent when ``web_contact`` is not set. :meth:`from_settings` builds one from the whole :class:`Settings`.
    """

    def __init__(
        self,
        settings: WebSettings,
        gate: DomainDecider,
        *,
        contact_email: str | None = None,
        counter: PageCounter | None = None,
        limiter: RequestSpacer | None = None,
        resolver: Resolver = system_resolver,
        renderer: PageRenderer | None = None,
    ) -> None:
        self.settings = settings
        self.gate: DomainDecider = gate
        # pages blocked for a dangerous pattern are refused at every hop (a redirect into one too)
        self.page_blocks = gate.page_block_reason if isinstance(gate, PageBlocks) else None
        self.counter: PageCounter = counter or MemoryPageCounter()
        self.limiter: RequestSpacer = limiter or RateLimiter()
        self.address_policy = AddressPolicy.from_allow_list(settings.fetch_allow_hosts)
        self.user_agent = user_agent(settings, contact_email)
        self.robots_agent = self.user_agent.split("/", 1)[0].split()[0] or "Lyra"
        if renderer is None and settings.web_browser != "off":
            renderer = ChromiumRenderer(settings.chromium_path)
        self.renderer = renderer
        self.resolver = resolver
        self._client = httpx.Client(
            transport=GuardedTransport(self.address_policy, resolver),
            follow_redirects=False,
            trust_env=False,
            cookies=_no_cookies(),
            headers={"User-Agent": self.user_agent, "Accept": ACCEPT},
        )
        self.robots = RobotsCache(self._load_robots, self.robots_agent, ttl=settings.web_robots_cache_seconds)
        self._trusted_client: httpx.Client | None = None  # built on the first request to a trusted origin
        self._trusted_lock = threading.Lock()
        self._closed = threading.Event()

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        gate: DomainDecider | None = None,
        *,
        counter: PageCounter | None = None,
        limiter: RequestSpacer | None = None,
        resolver: Resolver = system_resolver,
        renderer: PageRenderer | None = None,
    ) -> WebFetcher:
        """A fetcher from the whole settings: the web part, the contact e-mail and, without a ``gate``, the domain
        policy file alone (:class:`PolicyDecider`, re-read every ``LYRA_DOMAIN_POLICY_CHECK_SECONDS``)."""
        decider = gate or PolicyDecider(
            ReloadingDomainPolicy(
                settings.paths.domains_file, check_interval=settings.trust.domain_policy_check_seconds
            )
        )
        return cls(
            settings.web,
            decider,
            contact_email=settings.scholarly.contact_email,
            counter=counter,
            limiter=limiter,
            resolver=resolver,
            renderer=renderer,
        )

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self._client.close()
            if self._trusted_client is not None:
                self._trusted_client.close()
            if self.renderer is not None:
                self.renderer.close()

    def __enter__(self) -> WebFetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ public
    def get(
        self,
        url: str,
        *,
        robots: bool = True,
        count_page: bool = True,
        trusted_origin: str | None = None,
        max_bytes: int | None = None,
    ) -> RawResponse:
        """One GET through every rule of :meth:`fetch` (SSRF guard, domain gate, robots.txt unless ``robots`` is
        False, the daily page budget when ``count_page``, the domain's rate, size and time limits, redirects followed
        and re-checked hop by hop), any content type, nothing extracted: the final 2xx response with its body.
        Raises :class:`FetchRefused` with the code and reason.

        ``trusted_origin`` (``scheme://host:port``, :func:`origin_of`): an endpoint the operator configured, such as
        a SearXNG instance on the intranet. A request (or redirect hop) to exactly that origin accepts any address
        (the SSRF guard's address check is skipped for it, and only for it); every other hop is checked as usual."""
        trace = _Trace(deadline=time.monotonic() + self.settings.web_timeout_seconds)
        return self._get(
            url,
            trace,
            robots=robots,
            count_page=count_page,
            max_bytes=max_bytes or self.settings.web_max_bytes,
            any_type=True,
            trusted_origin=trusted_origin,
        )

    def render(self, response: RawResponse, renderer: PageRenderer | None = None) -> str:
        """The HTML of ``response`` (from :meth:`get`) after chromium ran it: the page is served as fetched, every
        other request the browser makes goes through this fetcher (same rules as a page, not counted in the daily
        budget). ``renderer``: this fetcher's own when None (ValueError when it has none). Raises what the renderer
        raises (chromium missing or failing)."""
        chosen = renderer or self.renderer
        if chosen is None:
            raise ValueError("no browser renderer: give one or set LYRA_WEB_BROWSER to auto or always")
        trace = _Trace(deadline=time.monotonic() + self.settings.web_timeout_seconds)
        return chosen.render(response, lambda sub: self._subresource(sub, trace), max(1.0, trace.remaining()))

    def fetch(self, url: str, *, cookies: Mapping[str, str] | None = None) -> FetchOutcome:
        """Fetch ``url`` and extract it; never raises for anything the page or the network does.

        ``cookies``: domain -> a Cookie header value a person obtained (``resolve_auth`` with ``cookie``); sent only
        to that domain and its subdomains, on every hop there, never logged. A CAPTCHA, login or consent wall is
        ``needs_intervention`` (:mod:`lyra.sources.web.challenge`) and is never extracted."""
        start = time.monotonic()
        trace = _Trace(deadline=start + self.settings.web_timeout_seconds, cookies=dict(cookies or {}))
        try:
            response = self._get(
                url, trace, robots=True, count_page=True, max_bytes=self.settings.web_max_bytes, read_walls=True
            )
        except _Refused as refused:
            wall = self._wall(refused.response) if refused.response is not None else None
            if wall is not None and refused.response is not None:
                return self._intervention(url, trace, start, wall, refused.response)
            return self._outcome(url, trace, start, refused.code, refused.reason, status=refused.status)
        fetched = time.monotonic()
        kind = self._kind(response)
        if kind == "html":
            wall = self._wall(response)
            if wall is not None:
                return self._intervention(url, trace, start, wall, response)
        extract_start = time.monotonic()
        if kind is None:
            return self._outcome(
                url,
                trace,
                start,
                "unsupported_type",
                f"content type {response.content_type or '(none)'} is neither HTML nor PDF; not read",
                response=response,
            )
        try:
            if kind == "pdf":
                pages = self.settings.web_pdf_max_pages
                extracted = extract_pdf(response.body, response.url, origin=url, max_pages=pages)
            else:
                extracted, rendered = self._html(response, trace)
                if rendered:
                    rendered_html = extracted.document.raw if extracted.document is not None else None
                    wall = self._wall(replace(response, body=(rendered_html or "").encode("utf-8")))
                    if wall is not None:
                        return self._intervention(url, trace, start, wall, response)
        except Exception as exc:  # an extractor failing on hostile markup must not stop the caller
            log.warning("extraction of %s failed: %s", response.url, exc)
            return self._outcome(
                url,
                trace,
                start,
                "extraction_failed",
                f"{kind} extraction failed: {type(exc).__name__}: {str(exc)[:200]}",
                response=response,
                extract_seconds=time.monotonic() - extract_start - trace.render_seconds,
            )
        extract_seconds = time.monotonic() - extract_start - trace.render_seconds
        if extracted.document is None:
            code: FetchCode = "bad_pdf" if extracted.skip_code == "bad_pdf" else "no_text"
            return self._outcome(
                url,
                trace,
                start,
                code,
                extracted.skip_reason or "no text",
                response=response,
                extract_seconds=extract_seconds,
                links=extracted.links,
            )
        return FetchOutcome(
            url=url,
            code="ok",
            reason=f"{kind} read",
            document=extracted.document,
            final_url=response.url,
            status=response.status,
            content_type=response.content_type,
            links=extracted.links,
            redirects=tuple(trace.hops),
            fetch_seconds=max(0.0, fetched - start - trace.wait_seconds),
            extract_seconds=extract_seconds,
            wait_seconds=trace.wait_seconds,
            render_seconds=trace.render_seconds,
            bytes_read=trace.bytes_read,
            rendered=extracted.document.extraction_method.endswith("+browser"),
            etag=_validators(response)[0],
            last_modified=_validators(response)[1],
            content_hash=content_hash(response.body),
        )

    def revalidate(
        self,
        url: str,
        *,
        etag: str | None = None,
        last_modified: str | None = None,
        known_hash: str | None = None,
    ) -> Revalidation:
        """Ask whether a known page changed: one GET through every rule of :meth:`fetch` (SSRF guard, domain gate,
        robots.txt, the daily page budget, the domain's rate, limits), with ``If-None-Match: etag`` and
        ``If-Modified-Since: last_modified`` when they are known. A 304 is ``not_modified`` (no body read); a 2xx
        body is hashed and compared with ``known_hash``. Nothing is extracted; never raises for what the page or
        the network does."""
        headers: dict[str, str] = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        trace = _Trace(deadline=time.monotonic() + self.settings.web_timeout_seconds)
        try:
            response = self._get(
                url,
                trace,
                robots=True,
                count_page=True,
                max_bytes=self.settings.web_max_bytes,
                any_type=True,
                extra_headers=headers,
            )
        except _Refused as refused:
            if refused.status == 304:
                fresh = _validators(refused.response) if refused.response is not None else (None, None)
                log.info("revalidate %s: 304 not modified", url)
                return Revalidation(
                    url,
                    "not_modified",
                    "HTTP 304: not modified",
                    304,
                    etag=fresh[0] or etag,
                    last_modified=fresh[1] or last_modified,
                    content_hash=known_hash,
                    bytes_read=trace.bytes_read,
                )
            log.info("revalidate %s: %s (%s)", url, refused.code, refused.reason)
            return Revalidation(
                url,
                "failed",
                refused.reason,
                refused.status,
                etag=etag,
                last_modified=last_modified,
                content_hash=known_hash,
                failure=refused.code,
                bytes_read=trace.bytes_read,
            )
        new_etag, new_modified = _validators(response)
        digest = content_hash(response.body)
        same = known_hash is not None and digest == known_hash
        code: RevalidationCode = "same_hash" if same else "changed"
        reason = (
            f"HTTP {response.status}: the same content"
            if same
            else f"HTTP {response.status}: " + ("the content changed" if known_hash else "no content hash known before")
        )
        log.info("revalidate %s: %s", url, code)
        return Revalidation(
            url,
            code,
            reason,
            response.status,
            etag=new_etag,
            last_modified=new_modified,
            content_hash=digest,
            bytes_read=trace.bytes_read,
        )

    # ------------------------------------------------------------------ steps
    @staticmethod
    def _wall(response: RawResponse) -> Challenge | None:
        """A CAPTCHA / login / consent wall in this answer (HTML, or an HTTP 401 asking for credentials)."""
        if response.content_type not in HTML_TYPES and response.content_type not in SNIFF_TYPES:
            if response.status == 401:
                return detect_challenge(response.status, response.headers, "", response.url)
            return None
        html = decode_html(response.body, response.charset) if response.body else ""
        return detect_challenge(response.status, response.headers, html, response.url)

    def _intervention(
        self, url: str, trace: _Trace, start: float, wall: Challenge, response: RawResponse
    ) -> FetchOutcome:
        outcome = self._outcome(
            url,
            trace,
            start,
            "needs_intervention",
            f"{wall.kind}: {wall.reason}; a person has to get past it (resolve_auth)",
            response=response,
        )
        return replace(outcome, challenge=wall)

    def _outcome(
        self,
        url: str,
        trace: _Trace,
        start: float,
        code: FetchCode,
        reason: str,
        *,
        status: int | None = None,
        response: RawResponse | None = None,
        extract_seconds: float = 0.0,
        links: tuple[Link, ...] = (),
    ) -> FetchOutcome:
        elapsed = time.monotonic() - start - trace.wait_seconds - extract_seconds - trace.render_seconds
        log.info("fetch %s: %s (%s)", url, code, reason)
        return FetchOutcome(
            url=url,
            code=code,
            reason=reason,
            final_url=response.url if response is not None else (trace.hops[-1] if trace.hops else None),
            status=response.status if response is not None else status,
            content_type=response.content_type if response is not None else None,
            links=links,
            redirects=tuple(trace.hops),
            fetch_seconds=max(0.0, elapsed),
            extract_seconds=extract_seconds,
            wait_seconds=trace.wait_seconds,
            render_seconds=trace.render_seconds,
            bytes_read=trace.bytes_read,
        )

    @staticmethod
    def _kind(response: RawResponse) -> Literal["html", "pdf"] | None:
        ctype = response.content_type
        if ctype in PDF_TYPES:
            return "pdf"
        if ctype in HTML_TYPES:
            return "html"
        if ctype in SNIFF_TYPES:
            head = response.body[:1024].lstrip()
            if head.startswith(b"%PDF-"):
                return "pdf"
            if head[:1] == b"<" and (b"<html" in head.lower() or b"<!doctype html" in head.lower()):
                return "html"
        return None

    def _html(self, response: RawResponse, trace: _Trace) -> tuple[Extracted, bool]:
        html = decode_html(response.body, response.charset)
        extracted = extract_html(html, response.url, origin=response.url, max_links=self.settings.web_max_links)
        mode = self.settings.web_browser
        if self.renderer is None or mode == "off":
            return extracted, False
        if mode == "auto" and not _needs_browser(html, extracted):
            return extracted, False
        render_start = time.monotonic()
        try:
            rendered = self.renderer.render(
                response, lambda sub: self._subresource(sub, trace), max(1.0, trace.remaining())
            )
        except Exception as exc:  # the browser failing keeps what plain HTTP gave
            log.warning("browser rendering of %s failed: %s", response.url, exc)
            return extracted, False
        finally:
            trace.render_seconds += time.monotonic() - render_start
        again = extract_html(rendered, response.url, origin=response.url, max_links=self.settings.web_max_links)
        if again.document is None:
            return extracted, False
        document = replace(again.document, extraction_method="trafilatura+browser", raw=rendered)
        return Extracted(document, again.links), True

    def _subresource(self, url: str, trace: _Trace) -> RawResponse:
        """A request the browser makes while rendering: same rules as a page (not counted in the daily budget)."""
        sub = _Trace(deadline=time.monotonic() + self.settings.web_timeout_seconds, cookies=trace.cookies)
        try:
            return self._get(
                url, sub, robots=True, count_page=False, max_bytes=self.settings.web_max_bytes, any_type=True
            )
        finally:
            trace.wait_seconds += sub.wait_seconds
            trace.bytes_read += sub.bytes_read

    def _robots_applies(self, domain: str) -> bool:
        if not self.settings.web_robots_txt:
            return False
        return not any(pattern_matches(p, domain) for p in self.settings.web_robots_ignore_domains)

    def _load_robots(self, origin: str) -> RobotsFile:
        trace = _Trace(deadline=time.monotonic() + min(self.settings.web_timeout_seconds, 15.0))
        try:
            got = self._get(
                origin + "/robots.txt",
                trace,
                robots=False,
                count_page=False,
                max_bytes=ROBOTS_MAX_BYTES,
                any_type=True,
                truncate=True,
            )
        except _Refused as refused:
            if refused.code == "http_error" and refused.status is not None:
                return RobotsFile(refused.status)
            if refused.code == "too_many_redirects":
                return RobotsFile(404, detail=refused.reason)  # RFC 9309 §2.3.1.2: treat as unavailable
            return RobotsFile(None, detail=refused.reason)
        return RobotsFile(got.status, got.body.decode("utf-8", errors="replace"))

    def _admit(self, url: str, trace: _Trace, *, robots: bool, count_page: bool, trusted: bool = False) -> None:
        """Every check before one request goes out; raises _Refused. Waits for the domain's rate slot last.
        ``trusted``: the URL is on the operator's trusted origin (any address accepted)."""
        address_policy = _TRUST_ANY_ADDRESS if trusted else self.address_policy
        problem = address_policy.url_problem(url)
        if problem is not None:
            raise _Refused(*problem)
        parts = urlsplit(url)
        host = parts.hostname or ""
        try:
            domain = normalise_domain(host).removeprefix("www.")
            decision = self.gate.decide(domain)
        except (ValueError, InvalidInputError) as exc:  # not a name the gate can look up
            raise _Refused("invalid_url", f"{host!r} is not a domain name: {exc}") from None
        if not decision.allowed:
            raise _Refused(
                "blocked_domain", f"domain {domain} is blocked ({decision.domain_block_reason}): {decision.reason}"
            )
        blocked_page = self.page_blocks(url) if self.page_blocks is not None else None
        if blocked_page is not None:
            raise _Refused("blocked_page", blocked_page)
        # a blocked domain is not even resolved. The host is resolved here so that nothing (not even robots.txt) is
        # asked of a refused host; the connection checks its own lookup again and connects only to a checked address
        # (ssrf.GuardedBackend)
        try:
            address_policy.checked_addresses(host, parts.port or _default_port(parts.scheme), self.resolver)
        except AddressRefused as exc:
            raise _Refused("ssrf_refused", exc.reason) from None
        interval = 1.0 / decision.qps if decision.qps > 0 else 1.0
        if robots and self._robots_applies(domain):
            answer = self.robots.check(_origin(url), url)
            if not answer.allowed:
                raise _Refused("robots_disallowed", answer.reason)
            if answer.crawl_delay:
                interval = max(interval, min(answer.crawl_delay, MAX_CRAWL_DELAY))
        if count_page and not self.counter.take(domain, decision.max_pages_per_day, utc_today()):
            raise _Refused(
                "daily_limit", f"{domain} reached its {decision.max_pages_per_day} pages for today (max_pages_per_day)"
            )
        trace.wait_seconds += self.limiter.wait(domain, interval)

    def _get(
        self,
        url: str,
        trace: _Trace,
        *,
        robots: bool,
        count_page: bool,
        max_bytes: int,
        any_type: bool = False,
        truncate: bool = False,
        trusted_origin: str | None = None,
        read_walls: bool = False,
        extra_headers: Mapping[str, str] | None = None,
    ) -> RawResponse:
        """GET with redirects followed by hand, each hop admitted again; the final 2xx response with its body.
        ``read_walls``: the HTML of a 401/403/429/503 answer is read too (bounded) and carried by the refusal, so
        the caller can tell a CAPTCHA or login wall from a plain error."""
        current = url
        for _ in range(self.settings.web_max_redirects + 1):
            trusted = bool(trusted_origin) and origin_of(current) == trusted_origin
            self._admit(current, trace, robots=robots, count_page=count_page, trusted=trusted)
            response = self._request(
                current,
                trace,
                max_bytes=max_bytes,
                any_type=any_type,
                truncate=truncate,
                trusted=trusted,
                read_walls=read_walls,
                extra_headers=extra_headers,
            )
            if response.status in REDIRECT_STATUSES:
                location = response.headers.get("location", "").strip()
                if not location:
                    raise _Refused("http_error", f"HTTP {response.status} without a Location", response.status)
                current = urljoin(current, location)
                trace.hops.append(current)
                continue
            if not 200 <= response.status < 300:
                raise _Refused("http_error", f"HTTP {response.status} from {current}", response.status, response)
            return response
        raise _Refused(
            "too_many_redirects", f"more than {self.settings.web_max_redirects} redirects (LYRA_WEB_MAX_REDIRECTS)"
        )

    def _client_for(self, trusted: bool) -> httpx.Client:
        if not trusted:
            return self._client
        with self._trusted_lock:
            if self._trusted_client is None:
                self._trusted_client = httpx.Client(
                    transport=GuardedTransport(_TRUST_ANY_ADDRESS, self.resolver),
                    follow_redirects=False,
                    trust_env=False,
                    cookies=_no_cookies(),
                    headers={"User-Agent": self.user_agent, "Accept": ACCEPT},
                )
            return self._trusted_client

    def _request(
        self,
        url: str,
        trace: _Trace,
        *,
        max_bytes: int,
        any_type: bool,
        truncate: bool,
        trusted: bool = False,
        read_walls: bool = False,
        extra_headers: Mapping[str, str] | None = None,
    ) -> RawResponse:
        remaining = trace.remaining()
        if remaining <= 0:
            raise _Refused("timeout", f"no time left for {url} ({self.settings.web_timeout_seconds}s in all)")
        timeout = httpx.Timeout(remaining, connect=min(self.settings.web_connect_timeout_seconds, remaining))
        cookie = cookie_for(trace.cookies, url)
        sent = dict(extra_headers or {})
        if cookie:
            sent["Cookie"] = cookie
        try:
            with self._client_for(trusted).stream("GET", url, timeout=timeout, headers=sent or None) as stream:
                headers = {k.lower(): v for k, v in stream.headers.items()}
                head = RawResponse(str(stream.url), stream.status_code, headers)
                wall_candidate = (
                    read_walls
                    and stream.status_code in CHALLENGE_STATUSES
                    and (head.content_type in HTML_TYPES or head.content_type in SNIFF_TYPES)
                )
                if wall_candidate:
                    max_bytes, truncate = min(max_bytes, CHALLENGE_MAX_BYTES), True
                elif stream.status_code in REDIRECT_STATUSES or not 200 <= stream.status_code < 300:
                    return head
                if not any_type and self._kind(head) is None and head.content_type not in SNIFF_TYPES:
                    raise _Refused(
                        "unsupported_type",
                        f"content type {head.content_type} is neither HTML nor PDF; not downloaded",
                        stream.status_code,
                    )
                declared = stream.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes and not truncate:
                    raise _Refused(
                        "too_large", f"Content-Length {declared} is above {max_bytes} bytes (LYRA_WEB_MAX_BYTES)"
                    )
                chunks: list[bytes] = []
                size = 0
                for chunk in stream.iter_bytes():
                    chunks.append(chunk)
                    size += len(chunk)
                    trace.bytes_read += len(chunk)
                    if size > max_bytes:
                        if truncate:
                            break
                        raise _Refused(
                            "too_large",
                            f"more than {max_bytes} bytes (LYRA_WEB_MAX_BYTES); stopped reading",
                            stream.status_code,
                        )
                    if time.monotonic() > trace.deadline:
                        raise _Refused("timeout", f"the download took longer than {self.settings.web_timeout_seconds}s")
                body = b"".join(chunks)[:max_bytes] if truncate else b"".join(chunks)
                return replace(head, body=body)
        except AddressRefused as exc:
            raise _Refused("ssrf_refused", exc.reason) from None
        except httpx.TimeoutException as exc:
            raise _Refused(
                "timeout", f"timed out ({type(exc).__name__}) after {self.settings.web_timeout_seconds}s at most"
            ) from None
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            raise _Refused("invalid_url", str(exc)) from None
        except httpx.HTTPError as exc:
            raise _Refused("network_error", f"{type(exc).__name__}: {exc}") from None


def _needs_browser(html: str, extracted: Extracted) -> bool:
    """``web_browser=auto``: render when plain HTML gave little text and the page runs scripts."""
    text = extracted.document.text if extracted.document is not None else ""
    return len(text) < 500 and html.lower().count("<script") >= 1
