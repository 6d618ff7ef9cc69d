"""Small network helpers shared by the settings checks, the request models, the HTTP adapter, the web search and
the domain gate (domain name checks, the canonical form of a page URL)."""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit


def is_loopback(host: str) -> bool:
    """True for ``localhost``, an empty bind host and loopback IPv4/IPv6 addresses (``[::1]`` too)."""
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# spaces, line breaks, control, format (zero-width, bidi), private-use, unassigned and surrogate code points: none of
# them belongs in a domain name, and IDNA would silently drop some (U+200B) where a person sees one name
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"})
_CONTROL_NAMES = {"\t": "CHARACTER TABULATION", "\n": "LINE FEED", "\r": "CARRIAGE RETURN", "\0": "NULL"}


def domain_char_problem(value: str) -> str | None:
    """Why ``value`` cannot be a domain name or pattern as written: the first space, line break, control or invisible
    character, with its code point, name and position (``contains U+200B ZERO WIDTH SPACE at position 4``); None
    when there is none. Such input is refused, never trimmed or dropped: the name a person sees must be the name
    Lyra uses."""
    for position, ch in enumerate(value, start=1):
        if unicodedata.category(ch) in _HIDDEN_CATEGORIES:
            name = _CONTROL_NAMES.get(ch) or unicodedata.name(ch, "a control or unassigned character")
            return (
                f"contains U+{ord(ch):04X} {name} at position {position}; a domain name holds no spaces, line "
                "breaks, control or invisible characters"
            )
    return None


_DOMAIN_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
MAX_DOMAIN_LENGTH = 253


def domain_syntax_error(value: str) -> str | None:
    """Why ``value`` is not a domain name (``example.org``, ``sub.example.co.jp``, an IDN, an IPv4 address), or None.

    Case and one trailing dot are ignored; whitespace, control and invisible characters are refused; a non-ASCII
    name is checked in its IDNA (punycode) form. Wildcards, paths, ports, schemes and empty labels are refused.
    """
    problem = domain_char_problem(value)
    if problem is not None:
        return f"is not a domain name: it {problem}"
    name = value.lower().removesuffix(".")
    if not name:
        return "is empty"
    if not name.isascii():
        try:
            name = name.encode("idna").decode("ascii")
        except UnicodeError:
            return "is not a valid internationalised domain name"
    if len(name) > MAX_DOMAIN_LENGTH:
        return f"is longer than {MAX_DOMAIN_LENGTH} characters"
    if any(not _DOMAIN_LABEL.match(label) for label in name.split(".")):
        return "is not a domain name: give letters, digits and hyphens in dot-separated labels, e.g. example.org"
    return None


TRACKING_PARAMS = frozenset(
    {"fbclid", "gclid", "dclid", "msclkid", "yclid", "igshid", "mc_cid", "mc_eid", "_hsenc", "_hsmi", "ref", "ref_src"}
)


def normalise_url(url: str) -> str:
    """The key two result URLs share when they name the same page: lowercase scheme and host without ``www.`` and
    the default port, no fragment, no trailing slash (but ``/``), no tracking parameters (``utm_*``, ``fbclid``,
    ``gclid``, ``ref`` ...); the other query parameters keep their order."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower().rstrip(".").removeprefix("www.")
    port = parts.port
    netloc = host if port is None or port == (443 if scheme == "https" else 80) else f"{host}:{port}"
    path = parts.path or "/"
    if path != "/":
        path = path.rstrip("/") or "/"
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if not k.lower().startswith("utm_") and k.lower() not in TRACKING_PARAMS
    ]
    return urlunsplit((scheme, netloc, path, urlencode(query), ""))
