"""Small network helpers shared by the settings checks and the HTTP adapter."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """True for ``localhost``, an empty bind host and loopback IPv4/IPv6 addresses (``[::1]`` too)."""
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
