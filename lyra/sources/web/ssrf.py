"""The SSRF guard: which URLs and addresses the web fetcher may connect to.

Rules
    * only ``http`` and ``https``; no user name or password in the URL;
    * a host that is an IP address, in any spelling ``inet_aton`` accepts (``2130706433``, ``0x7f.1``,
      ``0177.0.0.1``, ``127.1``) or as IPv6 (``[::ffff:127.0.0.1]``), is checked before anything is sent;
    * a host name is resolved once, every address it resolves to is checked, and the connection is made to one of
      those checked addresses (the resolved IP is pinned: no second lookup a DNS-rebinding server could answer
      differently); the peer address of the connected socket is checked once more;
    * refused: loopback, private (RFC 1918, unique local ``fc00::/7``), link-local (``169.254/16``, ``fe80::/10``),
      multicast, CGNAT / shared address space (``100.64/10``), unspecified (``0.0.0.0``, ``::``), reserved, the
      documentation and benchmarking ranges, cloud metadata addresses (``169.254.169.254``, ``fd00:ec2::254``,
      ``100.100.100.200``), and any address that is not globally routable; an IPv6 address that embeds an IPv4
      one (IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible ``::a.b.c.d``, NAT64 ``64:ff9b::/96`` and
      ``64:ff9b:1::/48``, 6to4 ``2002::/16``) is refused when the embedded address is; Teredo (``2001::/32``) always;
    * a host name that resolves to several addresses is refused when any of them is refused (a mixed answer is
      how a rebinding attack starts).

The allow-list (``LYRA_FETCH_ALLOW_HOSTS``: comma-separated) takes IP addresses, CIDR blocks and host names. An
address inside an allowed block (or equal to an allowed address) is accepted whatever range it is in; an allowed
host name is accepted whatever it resolves to (an intranet name). Tests put ``127.0.0.1`` there explicitly: without
it the loopback address is refused like any other.

How the connected address is pinned (httpx / httpcore)
    httpx's ``HTTPTransport`` hands every new connection to an ``httpcore.ConnectionPool``, which opens its sockets
    through a *network backend* (``connect_tcp(host, port, ...)``). :class:`GuardedTransport` is an
    ``HTTPTransport`` whose pool gets a :class:`GuardedBackend`: it resolves the host itself, checks every address,
    then asks httpcore's standard synchronous backend to connect to the chosen **IP literal**, so no second lookup
    happens. TLS is unaffected: httpcore starts TLS on that stream with ``server_hostname`` = the URL's host, so SNI
    and certificate checks use the name, and the ``Host`` header is the URL's too. After connecting, the socket's
    peer address (``getpeername``) is checked again. Proxies are never used (no ``trust_env``): a proxy would
    connect on our behalf where this check cannot see. Refusals raise :class:`AddressRefused`, which httpx passes
    through unchanged (it is not an httpcore exception).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

import httpcore
import httpx

__all__ = [
    "METADATA_ADDRESSES",
    "AddressPolicy",
    "AddressRefused",
    "GuardedBackend",
    "GuardedTransport",
    "Resolver",
    "address_refusal",
    "parse_ip_host",
    "system_resolver",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]
"""``(host, port) -> IP address strings``; the default is :func:`system_resolver` (``getaddrinfo``)."""

METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_IPV4_PART = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")


class AddressRefused(Exception):
    """A URL, host or connected address the SSRF guard does not allow; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _loose_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """An IPv4 address in any form ``inet_aton`` accepts (1 to 4 parts; decimal, octal ``0..``, hex ``0x..``; the
    last part fills the remaining bytes), else None. Strict: no signs, spaces or trailing text."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or not all(_IPV4_PART.fullmatch(p) for p in parts):
        return None
    values: list[int] = []
    for part in parts:
        if part[:2].lower() == "0x":
            values.append(int(part[2:] or "0", 16))
        elif len(part) > 1 and part.startswith("0"):
            values.append(int(part, 8))
        else:
            values.append(int(part))
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    number = 0
    for value in head:
        number = number * 256 + value
    number = number * 256 ** (5 - len(values)) + last
    return ipaddress.IPv4Address(number)


def parse_ip_host(host: str) -> IPAddress | None:
    """The IP address a URL host spells (``[v6]``, dotted, or a short/decimal/octal/hex IPv4 form), else None."""
    name = host.strip().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if ":" in name:
        try:
            return ipaddress.IPv6Address(name.split("%", 1)[0])
        except ValueError:
            return None
    return _loose_ipv4(name)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo server), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    packed = int(ip)
    if packed >> 32 == 0 and packed > 1:  # ::a.b.c.d (deprecated IPv4-compatible); not :: and ::1
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    if any(ip in net for net in _NAT64):
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[0]  # the server; the client address is obfuscated and checked below
    return None


def _range_refusal(ip: IPAddress) -> str | None:
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
        return "a CGNAT / shared address (100.64.0.0/10)"
    if isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local:
        return "a site-local address"
    if ip.is_reserved:  # before private: Python counts 240.0.0.0/4 as both
        return "a reserved address"
    if ip.is_private:
        return "a private address"
    if not ip.is_global:
        return "not a globally routable address"
    return None


def address_refusal(ip: IPAddress) -> str | None:
    """Why the guard refuses to connect to ``ip`` (ignoring any allow-list), or None when it is a public address."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            why = _range_refusal(inner)
            if why is not None:
                return f"{ip} embeds {inner}, {why}"
            if ip.ipv4_mapped is not None or int(ip) >> 32 == 0:
                return None  # the address *is* the IPv4 one: its own IPv6 range (reserved ::/8) does not matter
            if any(ip in net for net in _NAT64) or ip.sixtofour is not None:
                return None  # a public IPv4 address reached through a translator (Teredo: refused below)
    why = _range_refusal(ip)
    return f"{ip} is {why}" if why is not None else None


def _canonical(ip: IPAddress) -> IPAddress:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


@dataclass(frozen=True)
class AddressPolicy:
    """The guard's decisions; ``allow`` holds the explicit exceptions (IP addresses, CIDR blocks, host names)."""

    allow_networks: tuple[IPNetwork, ...] = ()
    allow_names: frozenset[str] = frozenset()

    @classmethod
    def from_allow_list(cls, entries: Iterable[str]) -> AddressPolicy:
        """Entries as in ``LYRA_FETCH_ALLOW_HOSTS``: ``127.0.0.1``, ``10.0.0.0/8``, ``::1``, ``intranet.example``."""
        networks: list[IPNetwork] = []
        names: set[str] = set()
        for raw in entries:
            entry = raw.strip().lower()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            if not re.fullmatch(r"[a-z0-9_.-]+", entry.rstrip(".")):
                raise ValueError(f"fetch allow-list entry {raw!r} is neither an IP address, a CIDR block nor a host")
            names.add(entry.rstrip("."))
        return cls(tuple(networks), frozenset(names))

    def name_allowed(self, host: str) -> bool:
        return host.strip().lower().rstrip(".") in self.allow_names

    def address_allowed(self, ip: IPAddress) -> bool:
        ip = _canonical(ip)
        return any(ip.version == net.version and ip in net for net in self.allow_networks)

    def refusal(self, ip: IPAddress, host: str | None = None) -> str | None:
        """Why ``ip`` (reached through ``host``) is refused, or None: allowed explicitly or a public address."""
        if (host is not None and self.name_allowed(host)) or self.address_allowed(ip):
            return None
        why = address_refusal(ip)
        if why is None:
            return None
        return f"{why}; add it to LYRA_FETCH_ALLOW_HOSTS to allow it"

    def url_problem(self, url: str) -> tuple[Literal["invalid_url", "ssrf_refused"], str] | None:
        """Why ``url`` may not be fetched at all, or None: ``invalid_url`` (malformed, another scheme, credentials)
        or ``ssrf_refused`` (an IP-literal host that is refused). A host name is checked later, on the addresses it
        resolves to (:meth:`checked_addresses`)."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            return "invalid_url", f"not a valid URL: {exc}"
        if parts.scheme.lower() not in ("http", "https"):
            scheme = parts.scheme or "a URL without a scheme"
            return "invalid_url", f"only http and https URLs are fetched, not {scheme}"
        if parts.username is not None or parts.password is not None:
            return "invalid_url", "URLs with a user name or password are not fetched"
        host = parts.hostname
        if not host:
            return "invalid_url", "the URL has no host"
        if port == 0:
            return "invalid_url", "port 0 is not a valid port"
        ip = parse_ip_host(host)
        why = self.refusal(ip, host) if ip is not None else None
        return ("ssrf_refused", why) if why is not None else None

    def url_refusal(self, url: str) -> str | None:
        """The reason of :meth:`url_problem`, or None."""
        problem = self.url_problem(url)
        return problem[1] if problem is not None else None

    def checked_addresses(self, host: str, port: int, resolve: Resolver) -> list[str]:
        """The addresses to connect to for ``host`` (resolved once), all checked; AddressRefused otherwise."""
        literal = parse_ip_host(host)
        if literal is not None:
            found = [literal]
        else:
            try:
                found = [ipaddress.ip_address(a.split("%", 1)[0]) for a in resolve(host, port)]
            except (OSError, UnicodeError) as exc:
                raise AddressRefused(f"cannot resolve {host}: {exc}") from None
            if not found:
                raise AddressRefused(f"{host} resolves to no address")
        for ip in found:
            why = self.refusal(ip, host)
            if why is not None:
                shown = f"{host}: {why}" if literal is None else why
                raise AddressRefused(shown)
        return list(dict.fromkeys(str(_canonical(ip)) for ip in found))


def system_resolver(host: str, port: int) -> list[str]:
    """Every TCP address ``getaddrinfo`` gives for ``host`` (IPv4 and IPv6), in its order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in infos]


class GuardedBackend(httpcore.NetworkBackend):
    """An httpcore network backend that connects only to checked, pinned addresses (see the module docstring)."""

    def __init__(self, policy: AddressPolicy, resolve: Resolver = system_resolver) -> None:
        self.policy = policy
        self.resolve = resolve
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = self.policy.checked_addresses(host, port, self.resolve)
        error: Exception | None = None
        for address in addresses:
            try:
                stream = self._inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                error = exc
                continue
            peer = stream.get_extra_info("server_addr")
            try:
                peer_ip = ipaddress.ip_address(str(peer[0]).split("%", 1)[0])
            except (TypeError, IndexError, ValueError):
                stream.close()
                raise AddressRefused(f"cannot read the connected address for {host}") from None
            why = self.policy.refusal(peer_ip, host)
            if why is not None or _canonical(peer_ip) != ipaddress.ip_address(address):
                stream.close()
                raise AddressRefused(f"connected to {peer_ip} for {host}: {why or 'not the checked address'}")
            return stream
        assert error is not None
        raise error

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise AddressRefused("Unix sockets are never used for fetching")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class GuardedTransport(httpx.HTTPTransport):
    """``httpx.HTTPTransport`` without proxies whose connections go through :class:`GuardedBackend`.

    httpx builds its ``httpcore.ConnectionPool`` in ``__init__`` without a way to pass a network backend, so the pool
    is rebuilt here with the same SSL context and limits plus the guarded backend.
    """

    def __init__(
        self,
        policy: AddressPolicy,
        resolve: Resolver = system_resolver,
        *,
        limits: httpx.Limits | None = None,
        verify: bool = True,
    ) -> None:
        limits = limits or httpx.Limits(max_connections=20, max_keepalive_connections=10, keepalive_expiry=30.0)
        super().__init__(verify=verify, trust_env=False, limits=limits)
        ssl_context = httpx.create_ssl_context(verify=verify, trust_env=False)
        self._pool.close()
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(policy, resolve),
        )
