"""Small network helpers shared by the settings checks and the HTTP adapter."""

from __future__ import annotations

import ipaddress
import re


def is_loopback(host: str) -> bool:
    """True for ``localhost``, an empty bind host and loopback IPv4/IPv6 addresses (``[::1]`` too)."""
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_DOMAIN_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
MAX_DOMAIN_LENGTH = 253


def domain_syntax_error(value: str) -> str | None:
    """Why ``value`` is not a domain name (``example.org``, ``sub.example.co.jp``, an IDN, an IPv4 address), or None.

    Case, surrounding whitespace and one trailing dot are ignored; a non-ASCII name is checked in its IDNA
    (punycode) form. Wildcards, paths, ports, schemes and empty labels are refused.
    """
    name = value.strip().lower().removesuffix(".")
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
