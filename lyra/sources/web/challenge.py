"""Pages a person has to get past: CAPTCHAs, login walls and consent walls.

:func:`detect_challenge` looks at one HTTP answer (status, headers, HTML) and says whether it is such a page, with a
``kind`` and a reason a person can read. The fetcher never hands such a page to extraction or ingest: it answers
``needs_intervention`` and the job is parked in the task's intervention queue (``lyra.services.interventions``).
Nothing here solves anything: the person solves it in their own browser.

Kinds and what flags them (markers + heuristics; "little text" = under :data:`SHORT_TEXT` characters of visible
text outside navigation, header, footer, forms and the consent notice itself):

* ``captcha`` — ``cf-mitigated: challenge`` (Cloudflare's own header), or little text plus a challenge widget
  (reCAPTCHA, hCaptcha, Cloudflare Turnstile, Cloudflare's challenge platform script, DataDome, PerimeterX: the
  widget's class, script or iframe address, ``data-sitekey``) or a challenge phrase ("checking your browser",
  "verify you are human", "unusual traffic from your computer network", "are you a robot", a "Just a moment..."
  or "Attention Required!" title).
* ``login_wall`` — HTTP 401 with ``WWW-Authenticate``; or a password field with little text, or a 401/403 answer
  with a login form, or a "sign in to continue"-style phrase with little text.
* ``consent_wall`` — a cookie/GDPR consent notice (a consent manager's element, or the phrases of one: "we use
  cookies", "accept all", "manage preferences", ...) and nothing else to read; or a consent host (``consent.*``).

What must not be flagged (tests/unit/sources/test_challenge.py): an article that talks about CAPTCHAs or quotes
"verify you are human", an article with a reCAPTCHA-protected comment form, an article with a login form in its
header, an article with a cookie banner, a short page with none of the markers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

import lxml.html
from lxml import etree

__all__ = ["SHORT_TEXT", "Challenge", "ChallengeKind", "detect_challenge", "page_signals"]

ChallengeKind = Literal["captcha", "login_wall", "consent_wall"]
SHORT_TEXT = 600  # visible characters of content below which a page is "mostly a wall"
MAX_HTML = 2_000_000  # characters of a page inspected (a wall is small; an article past this is not one)
MAX_TEXT = 20_000  # characters of text read from a page (phrases of a wall come early; its text is short)

CAPTCHA_CLASSES = ("g-recaptcha", "h-captcha", "cf-turnstile", "px-captcha", "cf-challenge", "captcha-container")
CAPTCHA_SOURCES = (
    "google.com/recaptcha",
    "recaptcha.net",
    "gstatic.com/recaptcha",
    "hcaptcha.com",
    "challenges.cloudflare.com",
    "/cdn-cgi/challenge-platform",
    "captcha-delivery.com",  # DataDome
    "px-cloud.net",  # PerimeterX / HUMAN
    "perimeterx.net",
    "arkoselabs.com",  # FunCaptcha
    "funcaptcha.com",
)
CAPTCHA_SCRIPT_MARKERS = ("cf_chl_opt", "__cf_chl_", "cf-browser-verification", "_pxcaptcha", "ddcaptcha")
CAPTCHA_PHRASES = (
    "checking your browser",
    "checking if the site connection is secure",
    "verify you are human",
    "verify that you are human",
    "verifying you are human",
    "confirm you are human",
    "prove you are human",
    "are you a robot",
    "i'm not a robot",
    "unusual traffic from your computer network",
    "our systems have detected unusual traffic",
    "complete the security check",
    "please complete the captcha",
    "solve the captcha",
    "press & hold",
    "press and hold",
    "enable javascript and cookies to continue",
)
CAPTCHA_TITLES = ("just a moment", "attention required", "are you a robot", "security check", "captcha", "robot check")
LOGIN_PHRASES = (
    "sign in to continue",
    "log in to continue",
    "login to continue",
    "sign in to read",
    "log in to read",
    "sign in to view",
    "log in to view",
    "please sign in",
    "please log in",
    "please login",
    "you must be logged in",
    "you need to sign in",
    "you need to log in",
    "login required",
    "sign-in required",
    "authentication required",
)
LOGIN_TITLES = ("sign in", "log in", "login", "sign-in", "anmelden", "connexion")
CONSENT_MARKERS = (
    "cookie-consent",
    "cookieconsent",
    "cookie-banner",
    "cookiebanner",
    "cookie-notice",
    "consent-banner",
    "consent-wall",
    "consent-dialog",
    "gdpr",
    "onetrust",
    "didomi",
    "qc-cmp",
    "cybotcookiebot",
    "cookiebot",
    "truste",
    "sp_message",
    "fc-consent",
    "cmp-container",
    "usercentrics",
)
CONSENT_PHRASES = (
    "we use cookies",
    "this site uses cookies",
    "this website uses cookies",
    "accept all",
    "accept cookies",
    "reject all",
    "manage preferences",
    "manage cookies",
    "cookie settings",
    "your privacy choices",
    "we value your privacy",
    "consent to the use of",
    "before you continue",
)
_LAYOUT_TAGS = ("nav", "header", "footer", "aside")
_DROPPED_TAGS = ("script", "style", "noscript", "template", "svg")


@dataclass(frozen=True)
class Challenge:
    """A page a person has to get past: ``kind`` and why it was judged so."""

    kind: ChallengeKind
    reason: str


@dataclass(frozen=True)
class PageSignals:
    """What the detector reads from one page (exposed for tests and for explaining a decision)."""

    title: str
    text_chars: int  # visible text outside navigation, header, footer, forms and the consent notice (capped)
    all_text: str  # all visible text, lower-case, spaces collapsed (phrase matching)
    password_fields: int
    forms: int
    captcha_markers: tuple[str, ...]
    consent_markers: tuple[str, ...]
    consent_text_chars: int


def _text(node: etree._Element, limit: int = MAX_TEXT) -> str:
    """The node's text, spaces collapsed; reading stops once about ``limit`` characters were collected (a wall is
    short: past that the exact length does not matter, and a long page costs no more than a short one)."""
    parts: list[str] = []
    size = 0
    for piece in node.itertext():
        parts.append(piece)
        size += len(piece)
        if size > limit:
            break
    return " ".join(" ".join(parts).split())[:limit]


def _attrs(node: etree._Element) -> str:
    return " ".join(str(node.get(name) or "") for name in ("id", "class", "src", "href", "action", "name")).lower()


def page_signals(html: str) -> PageSignals | None:
    """The signals of an HTML page; None when it cannot be parsed."""
    try:
        root = lxml.html.document_fromstring(html[:MAX_HTML])
    except (etree.ParserError, ValueError):
        return None
    title_node = root.find(".//title")
    title = _text(title_node).lower() if title_node is not None else ""
    captcha: list[str] = []
    for node in root.iter("script", "iframe", "div", "form", "input", "section", "span"):
        attrs = _attrs(node)
        for marker in (*CAPTCHA_CLASSES, *CAPTCHA_SOURCES):
            if marker in attrs and marker not in captcha:
                captcha.append(marker)
        if node.get("data-sitekey") and "data-sitekey" not in captcha:
            captcha.append("data-sitekey")
        if node.tag == "script" and node.text:
            for marker in CAPTCHA_SCRIPT_MARKERS:
                if marker in node.text and marker not in captcha:
                    captcha.append(marker)
    for node in list(root.iter(*_DROPPED_TAGS)):
        node.drop_tree()
    body = root.find(".//body")
    scope = body if body is not None else root
    all_text = _text(scope).lower()
    password_fields = len(scope.xpath(".//input[translate(@type,'PASSWORD','password')='password']"))
    forms = len(scope.xpath(".//form"))
    consent: list[str] = []
    consent_chars = 0
    for node in scope.xpath(".//*[@id or @class or @aria-label or @data-testid]"):  # attribute-less nodes skipped in C
        if node.getparent() is None:
            continue
        attrs = " ".join(str(node.get(name) or "") for name in ("id", "class", "aria-label", "data-testid")).lower()
        hits = [m for m in CONSENT_MARKERS if m in attrs]
        if hits:
            consent.extend(h for h in hits if h not in consent)
            consent_chars += len(_text(node))
            node.drop_tree()
    for node in list(scope.iter(*_LAYOUT_TAGS, "form")):
        if node.getparent() is not None:
            node.drop_tree()
    remaining = _text(scope)
    return PageSignals(
        title=title,
        text_chars=len(remaining),
        all_text=all_text,
        password_fields=password_fields,
        forms=forms,
        captcha_markers=tuple(captcha),
        consent_markers=tuple(consent),
        consent_text_chars=consent_chars,
    )


def _phrase(text: str, phrases: tuple[str, ...]) -> str | None:
    return next((p for p in phrases if p in text), None)


def detect_challenge(status: int, headers: Mapping[str, str], html: str, url: str = "") -> Challenge | None:
    """Whether one answer (``headers`` with lower-case names) is a CAPTCHA, login wall or consent wall page."""
    lower = {k.lower(): v for k, v in headers.items()}
    if lower.get("cf-mitigated", "").strip().lower() == "challenge":
        return Challenge("captcha", f"HTTP {status} with cf-mitigated: challenge (a Cloudflare challenge page)")
    if status == 401 and lower.get("www-authenticate"):
        scheme = lower["www-authenticate"].split(" ", 1)[0][:40]
        return Challenge("login_wall", f"HTTP 401: the server asks for credentials (WWW-Authenticate: {scheme})")
    if not html.strip():
        return None
    signals = page_signals(html)
    if signals is None:
        return None
    short = signals.text_chars < SHORT_TEXT
    title = signals.title
    text = signals.all_text

    # CAPTCHA and bot-check interstitials
    phrase = _phrase(text, CAPTCHA_PHRASES) or _phrase(title, CAPTCHA_PHRASES)
    title_hit = next((t for t in CAPTCHA_TITLES if title.startswith(t)), None)
    if short and signals.captcha_markers:
        return Challenge(
            "captcha",
            f"a challenge widget ({', '.join(signals.captcha_markers[:3])}) on a page with "
            f"{signals.text_chars} characters of other text (HTTP {status})",
        )
    if short and (phrase or (title_hit and status in (403, 429, 503))):
        said = f"'{phrase}'" if phrase else f"the title '{title[:80]}'"
        chars = signals.text_chars
        return Challenge("captcha", f"a bot check: {said} on a page with {chars} characters (HTTP {status})")

    # login walls
    login_phrase = _phrase(text, LOGIN_PHRASES)
    if signals.password_fields and short:
        return Challenge(
            "login_wall",
            f"a login form (password field) on a page with {signals.text_chars} characters of other text "
            f"(HTTP {status})",
        )
    if status in (401, 403) and signals.forms and (login_phrase or any(t in title for t in LOGIN_TITLES)):
        return Challenge("login_wall", f"HTTP {status} with a login form")
    if login_phrase and short:
        return Challenge("login_wall", f"'{login_phrase}' on a page with {signals.text_chars} characters of text")

    # consent walls
    host = (urlsplit(url).hostname or "").lower()
    consent_phrase = _phrase(text, CONSENT_PHRASES)
    if short and (signals.consent_markers or (consent_phrase and "cookie" in text)):
        what = (
            f"a consent notice ({', '.join(signals.consent_markers[:3])})"
            if signals.consent_markers
            else f"a consent notice ('{consent_phrase}')"
        )
        return Challenge(
            "consent_wall", f"{what} and only {signals.text_chars} characters of other text (HTTP {status})"
        )
    if host.startswith("consent.") and short:
        return Challenge("consent_wall", f"a consent page at {host} with little else to read")
    return None
