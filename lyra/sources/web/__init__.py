"""Web fetching: the one fetcher for ``url`` targets and every candidate URL.

Entry point::

    fetcher = WebFetcher(settings.web, domain_gate)    # once per process; thread-safe, shared by worker threads
    outcome = fetcher.fetch("https://journal.example/article/1")
    if outcome.ok:
        ingest(outcome.document)                         # a SourceDocument; ``raw`` set, so ingest scans it
    else:
        report(outcome.code, outcome.reason)             # e.g. "robots_disallowed", "too_large"

What every fetch goes through, per request (each redirect hop again, followed by hand up to
``LYRA_WEB_MAX_REDIRECTS``):

1. **SSRF guard** (:mod:`lyra.sources.web.ssrf`): http(s) only, no credentials in the URL, no private / loopback /
   link-local / CGNAT / multicast / reserved / metadata address in any spelling; host names are resolved once,
   every address is checked, the connection goes to the checked address (pinned) and the socket's peer address is
   checked again. ``LYRA_FETCH_ALLOW_HOSTS`` lists exceptions (IPs, CIDR blocks, host names).
2. **Domain gate**: the ``gate`` given to the constructor (``DomainGate.decide``); a blocked domain is never contacted
   (not even for robots.txt). Without a gate, ``config/domains.yaml``'s denylist and politeness apply.
3. **robots.txt** (``protego``), cached per scheme://host:port for ``LYRA_WEB_ROBOTS_CACHE_SECONDS``;
   ``LYRA_WEB_ROBOTS_TXT=false`` turns it off, ``LYRA_WEB_ROBOTS_IGNORE_DOMAINS`` for some domains. A 4xx robots.txt
   allows all, a 5xx or unreachable one disallows the site for 10 minutes (RFC 9309). ``Crawl-delay`` slows the
   domain's rate further (capped at 30 s).
4. **Daily budget**: ``max_pages_per_day`` of the domain (``config/domains.yaml``), counted by a
   :class:`~lyra.sources.web.politeness.PageCounter` (in-process by default; the services give the fetcher
   ``GraphPageCounter``, held in Neo4j and shared by every process).
5. **Rate**: at most ``qps`` requests per second per domain, across all threads sharing the fetcher (the services
   give it ``GraphRateLimiter``: across every process sharing the database).
6. **Limits**: ``LYRA_WEB_TIMEOUT_SECONDS`` for the whole fetch (connect: ``LYRA_WEB_CONNECT_TIMEOUT_SECONDS``),
   ``LYRA_WEB_MAX_BYTES`` read at most (streamed; a larger declared Content-Length is refused before reading).
7. **Content type**: HTML (``text/html``, XHTML) goes through trafilatura: main text, title, date -> year, author,
   DOI and date from scholarly meta tags, and the links of the main content; PDF through pypdf (first
   ``LYRA_WEB_PDF_MAX_PAGES`` pages; title, author, year from its metadata); an unlabelled body is sniffed;
   anything else is ``unsupported_type`` and its body is not downloaded.

The User-Agent is ``LYRA_WEB_USER_AGENT`` plus ``LYRA_WEB_CONTACT`` (please set a contact); robots.txt rules are
matched against the product token ``Lyra``.

Outcome codes (:data:`FetchCode`): ``ok``, ``invalid_url``, ``ssrf_refused``, ``blocked_domain``, ``blocked_page``
(a page that carried a dangerous pattern, when the gate keeps page blocks), ``robots_disallowed``, ``daily_limit``,
``too_large``, ``timeout``, ``unsupported_type``, ``too_many_redirects``,
``http_error``, ``network_error``, ``no_text``, ``bad_pdf``, ``extraction_failed``, ``needs_intervention`` (a CAPTCHA,
login or consent wall: :mod:`lyra.sources.web.challenge`; never extracted, ``outcome.challenge`` says which).

Browser backend: a :class:`PageRenderer` (``render(url, fetch, timeout) -> html``) plugs in after the HTTP fetch
when ``LYRA_WEB_BROWSER`` is ``auto`` (little text and scripts) or ``always``. The renderer must serve every request
the browser makes through ``fetch`` (the same guarded, polite path), so the browser never reaches the network by
itself.

Known pages: ``fetcher.revalidate(url, etag=..., last_modified=..., known_hash=...)`` asks with a conditional GET
(``If-None-Match`` / ``If-Modified-Since``) whether a page changed, under the same rules; a successful ``fetch``
carries the validators and the body's sha256 to keep (``outcome.etag``, ``last_modified``, ``content_hash``).

Raw requests: ``fetcher.get(url, robots=..., trusted_origin=...)`` applies the same rules without extracting anything
(the search engines of :mod:`lyra.sources.search` read their JSON and result pages with it) and raises
:class:`FetchRefused`; ``fetcher.render(response, renderer)`` runs a fetched page in chromium with every other request
served through the fetcher.
"""

from lyra.sources.web.challenge import Challenge, detect_challenge
from lyra.sources.web.extract import Link
from lyra.sources.web.fetcher import (
    FetchCode,
    FetchOutcome,
    FetchRefused,
    Revalidation,
    WebFetcher,
    content_hash,
    origin_of,
)
from lyra.sources.web.politeness import (
    DomainDecider,
    MemoryPageCounter,
    PageCounter,
    PolicyDecider,
    RateLimiter,
    RequestSpacer,
)
from lyra.sources.web.ssrf import AddressPolicy, AddressRefused
from lyra.sources.web.types import PageRenderer, RawResponse

__all__ = [
    "AddressPolicy",
    "AddressRefused",
    "Challenge",
    "DomainDecider",
    "FetchCode",
    "FetchOutcome",
    "FetchRefused",
    "Link",
    "MemoryPageCounter",
    "PageCounter",
    "PageRenderer",
    "PolicyDecider",
    "RateLimiter",
    "RawResponse",
    "RequestSpacer",
    "Revalidation",
    "WebFetcher",
    "content_hash",
    "detect_challenge",
    "origin_of",
]
