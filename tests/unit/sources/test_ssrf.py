"""The SSRF guard's decisions, without I/O: every spelling of an internal address is refused, public ones pass, and
the allow-list lets through exactly what it names."""

from __future__ import annotations

import ipaddress

import pytest
from pydantic import ValidationError

from lyra.core.settings import load_settings
from lyra.sources.web.ssrf import AddressPolicy, AddressRefused, address_refusal, parse_ip_host

GUARD = AddressPolicy()

REFUSED_URLS = [
    # (url, words the reason contains)
    ("http://127.0.0.1/", "loopback"),
    ("http://127.0.0.1./", "loopback"),
    ("http://2130706433/", "loopback"),  # decimal
    ("http://017700000001/", "loopback"),  # octal, one part
    ("http://0x7f000001/", "loopback"),  # hex, one part
    ("http://0x7f.1/", "loopback"),  # hex, short form
    ("http://0177.0.0.1/", "loopback"),  # octal first part
    ("http://127.1/", "loopback"),  # short form
    ("http://127.0.1/", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://[::ffff:127.0.0.1]/", "embeds 127.0.0.1"),  # IPv4-mapped
    ("http://[::ffff:7f00:1]/", "embeds 127.0.0.1"),
    ("http://[::127.0.0.1]/", "embeds 127.0.0.1"),  # IPv4-compatible
    ("http://[64:ff9b::127.0.0.1]/", "embeds 127.0.0.1"),  # NAT64
    ("http://[64:ff9b::a00:1]/", "embeds 10.0.0.1"),
    ("http://[2002:7f00:1::]/", "embeds 127.0.0.1"),  # 6to4
    ("http://[2002:c0a8:101::1]/", "embeds 192.168.1.1"),
    ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "private"),  # Teredo
    ("http://0.0.0.0/", "unspecified"),
    ("http://0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://10.0.0.1/", "private"),
    ("http://172.16.5.4/", "private"),
    ("http://192.168.0.10/", "private"),
    ("http://[fc00::1]/", "private"),
    ("http://[fd12:3456::1]/", "private"),
    ("http://169.254.169.254/latest/meta-data/", "metadata"),
    ("http://0xa9.0xfe.0xa9.0xfe/", "metadata"),
    ("http://[fd00:ec2::254]/", "metadata"),
    ("http://[::ffff:169.254.169.254]/", "metadata"),
    ("http://100.100.100.200/", "metadata"),
    ("http://169.254.1.1/", "link-local"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[fe80::1%25eth0]/", "link-local"),
    ("http://100.64.0.1/", "CGNAT"),
    ("http://100.127.255.254/", "CGNAT"),
    ("http://224.0.0.1/", "multicast"),
    ("http://239.255.255.250/", "multicast"),
    ("http://[ff02::1]/", "multicast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://255.255.255.255/", "reserved"),
    ("http://192.0.2.10/", "private"),  # documentation range
    ("http://198.18.0.1/", "private"),  # benchmarking range
    ("https://127.0.0.1:8443/x?y=1", "loopback"),
]


@pytest.mark.parametrize(("url", "words"), REFUSED_URLS)
def test_every_spelling_of_an_internal_address_is_refused(url: str, words: str) -> None:
    why = GUARD.url_refusal(url)
    assert why is not None and words in why, why
    assert "LYRA_FETCH_ALLOW_HOSTS" in why


@pytest.mark.parametrize(
    "url",
    [
        "http://8.8.8.8/",
        "https://1.1.1.1/dns-query",
        "http://[2606:4700:4700::1111]/",
        "http://[64:ff9b::808:808]/",  # NAT64 of a public address
        "http://[::ffff:8.8.8.8]/",
        "https://example.org/paper",  # a name is checked on the addresses it resolves to, later
        "http://0x08.0x08.0x08.0x08/",
    ],
)
def test_public_addresses_and_names_pass_the_url_check(url: str) -> None:
    assert GUARD.url_refusal(url) is None


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("file:///etc/passwd", "only http and https"),
        ("ftp://example.org/x", "only http and https"),
        ("gopher://example.org:70/", "only http and https"),
        ("javascript:alert(1)", "only http and https"),
        ("example.org/path", "only http and https"),
        ("http://user:secret@example.org/", "user name or password"),
        ("http:///nohost", "no host"),
        ("http://example.org:99999/", "not a valid URL"),
    ],
)
def test_other_schemes_credentials_and_malformed_urls_are_refused(url: str, words: str) -> None:
    why = GUARD.url_refusal(url)
    assert why is not None and words in why, why


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("10.1.256", "10.1.1.0"),  # the last part fills two bytes
        ("0", "0.0.0.0"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
        ("1.2.3.4.", "1.2.3.4"),
    ],
)
def test_ip_hosts_are_read_the_way_inet_aton_reads_them(host: str, address: str) -> None:
    assert parse_ip_host(host) == ipaddress.ip_address(address)


@pytest.mark.parametrize("host", ["example.org", "1.2.3.4.5", "256.1.1.1", "08.1.2.3", "1.2.3.4x", "-1", "", "1..2"])
def test_names_and_malformed_numbers_are_not_ip_hosts(host: str) -> None:
    assert parse_ip_host(host) is None


def test_address_refusal_names_the_range() -> None:
    assert address_refusal(ipaddress.ip_address("8.8.8.8")) is None
    assert address_refusal(ipaddress.ip_address("127.0.0.1")) == "127.0.0.1 is a loopback address"


def test_loopback_is_refused_unless_the_allow_list_names_it() -> None:
    assert GUARD.url_refusal("http://127.0.0.1:8080/") is not None
    allowed = AddressPolicy.from_allow_list(["127.0.0.1"])
    assert allowed.url_refusal("http://127.0.0.1:8080/") is None
    assert allowed.url_refusal("http://2130706433:8080/") is None  # the same address, spelled otherwise
    assert allowed.url_refusal("http://[::ffff:127.0.0.1]/") is None
    assert allowed.url_refusal("http://127.0.0.2/") is not None  # only what it names
    assert allowed.url_refusal("http://[::1]/") is not None
    assert allowed.url_refusal("http://10.0.0.1/") is not None


def test_the_allow_list_takes_cidr_blocks_and_host_names() -> None:
    policy = AddressPolicy.from_allow_list(["10.1.0.0/16", "wiki.intranet", "[::1]"])
    assert policy.url_refusal("http://10.1.200.3/") is None
    assert policy.url_refusal("http://10.2.0.1/") is not None
    assert policy.url_refusal("http://[::1]/") is None

    def intranet(host: str, port: int) -> list[str]:
        return ["10.9.9.9"]

    assert policy.checked_addresses("wiki.intranet", 80, intranet) == ["10.9.9.9"]
    with pytest.raises(AddressRefused, match=r"other\.intranet: 10\.9\.9\.9 is a private address"):
        policy.checked_addresses("other.intranet", 80, intranet)
    with pytest.raises(ValueError, match="neither an IP address"):
        AddressPolicy.from_allow_list(["http://x/"])


def test_a_name_resolving_to_any_refused_address_is_refused() -> None:
    def mixed(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "127.0.0.1"]

    with pytest.raises(AddressRefused, match=r"127\.0\.0\.1 is a loopback address"):
        GUARD.checked_addresses("mixed.example", 80, mixed)

    def public(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]

    assert GUARD.checked_addresses("example.com", 443, public) == [
        "93.184.216.34",
        "2606:2800:220:1:248:1893:25c8:1946",
    ]

    def nothing(host: str, port: int) -> list[str]:
        raise OSError("Name or service not known")

    with pytest.raises(AddressRefused, match="cannot resolve"):
        GUARD.checked_addresses("nowhere.example", 80, nothing)


def test_the_allow_list_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LYRA_FETCH_ALLOW_HOSTS", "127.0.0.1, ::1,10.0.0.0/8 wiki.intranet")
    assert load_settings().web.fetch_allow_hosts == ["127.0.0.1", "::1", "10.0.0.0/8", "wiki.intranet"]
    monkeypatch.setenv("LYRA_FETCH_ALLOW_HOSTS", "http://evil/")
    with pytest.raises(ValidationError, match="LYRA_FETCH_ALLOW_HOSTS"):
        load_settings()
    monkeypatch.delenv("LYRA_FETCH_ALLOW_HOSTS")
    assert load_settings().web.fetch_allow_hosts == []
