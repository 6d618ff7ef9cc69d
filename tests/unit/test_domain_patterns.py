"""Domain patterns: validation table, matching, rule priority, public suffixes and IDN (pure code, no database)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lyra.core.errors import InvalidInputError
from lyra.sources.domain_patterns import (
    choose_rule,
    is_public_suffix,
    normalise_domain,
    pattern_matches,
    pattern_specificity,
    validate_pattern,
)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("example.com", "example.com"),
        ("  Example.COM.  ", "example.com"),
        ("www.example.com", "www.example.com"),
        ("*.example.com", "*.example.com"),
        ("*.Example.Co.JP", "*.example.co.jp"),
        ("*.example.co.jp", "*.example.co.jp"),
        ("example.github.io", "example.github.io"),
        ("*.foo.github.io", "*.foo.github.io"),
        ("a-b.c1.example.org", "a-b.c1.example.org"),
        ("xn--bcher-kva.de", "xn--bcher-kva.de"),
        ("bücher.de", "xn--bcher-kva.de"),
        ("*.例え.jp", "*.xn--r8jz45g.jp"),
        ("malware.example", "malware.example"),
        ("a" * 63 + ".com", "a" * 63 + ".com"),
    ],
)
def test_accepted_patterns_are_normalised(pattern: str, expected: str) -> None:
    assert validate_pattern(pattern) == expected


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("*", "would match every domain"),
        ("*.*", "would match every domain"),
        ("**", "'**' is not supported"),
        ("**.example.com", "'**' is not supported"),
        ("ex*ample.com", "only allowed as a leading '*.'"),
        ("*example.com", "only allowed as a leading '*.'"),
        ("example.*", "only allowed as a leading '*.'"),
        ("*.*.example.com", "only one leading '*.'"),
        ("*.", "no domain name after '*.'"),
        ("https://x.com", "is a URL"),
        ("x.com/path", "contains a path"),
        ("x.com:80", "contains a port"),
        ("192.168.0.1", "IP address"),
        ("::1", "IP address"),
        ("[2001:db8::1]", "IP address"),
        ("*.10.0.0", "IP address"),
        ("exa mple.com", "characters that cannot appear"),
        ("user@example.com", "characters that cannot appear"),
        ("example..com", "empty label"),
        (".example.com", "empty label"),
        ("-example.com", "not a valid host name label"),
        ("example-.com", "not a valid host name label"),
        ("exa_mple.com", "not a valid host name label"),
        ("a" * 64 + ".com", "longer than 63 characters"),
        (".".join(["abcdefghi"] * 26) + ".com", "longer than 253 characters"),
        ("com", "is a public suffix"),
        ("co.jp", "is a public suffix"),
        ("github.io", "is a public suffix"),
        ("localhost", "is a public suffix"),
        ("*.com", "every domain under the public suffix 'com'"),
        ("*.co.jp", "every domain under the public suffix 'co.jp'"),
        ("*.github.io", "every domain under the public suffix 'github.io'"),
        ("*.example", "public suffix"),
    ],
)
def test_refused_patterns_say_why(pattern: str, fragment: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        validate_pattern(pattern, field="args.rules[0].domain")
    assert fragment in caught.value.reason
    assert caught.value.field == "args.rules[0].domain"
    assert caught.value.message.startswith("args.rules[0].domain: ")
    assert caught.value.hint


def test_default_field_name() -> None:
    with pytest.raises(InvalidInputError) as caught:
        validate_pattern("*")
    assert caught.value.field == "args.domain_pattern"


@pytest.mark.parametrize("pattern", ["*.edu", "*.gov", "*.co.jp", "*.github.io", "com", "local"])
def test_public_suffixes_allowed_on_request(pattern: str) -> None:
    assert validate_pattern(pattern, allow_public_suffix=True) == pattern


@pytest.mark.parametrize("pattern", ["*", "*.*", "ex*ample.com", "x.com/path", "10.0.0.1"])
def test_allow_public_suffix_does_not_relax_syntax(pattern: str) -> None:
    with pytest.raises(InvalidInputError):
        validate_pattern(pattern, allow_public_suffix=True)


def test_normalise_domain() -> None:
    assert normalise_domain("  WWW.Example.COM. ") == "www.example.com"
    assert normalise_domain("Bücher.DE") == "xn--bcher-kva.de"
    assert normalise_domain("例え.テスト") == "xn--r8jz45g.xn--zckzah"
    with pytest.raises(ValueError, match="internationalised domain name"):
        normalise_domain("ü..com")
    with pytest.raises(ValueError, match="internationalised domain name"):
        normalise_domain("ü" + "a" * 70 + ".com")


def test_idn_matches_its_punycode() -> None:
    pattern = validate_pattern("*.bücher.de")
    assert pattern_matches(pattern, "shop.xn--bcher-kva.de")
    assert pattern_matches(pattern, "shop.bücher.de")
    assert pattern_matches("bücher.de", "xn--bcher-kva.de")


@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        ("com", True),
        ("co.jp", True),
        ("jp", True),
        ("github.io", True),  # a private suffix in the PSL
        ("blogspot.com", True),
        ("Co.JP.", True),
        ("рф", True),
        ("example.com", False),
        ("example.co.jp", False),
        ("example.github.io", False),
        ("foo.bar.github.io", False),
        ("日本.jp", False),
        ("", False),
    ],
)
def test_is_public_suffix(domain: str, expected: bool) -> None:
    assert is_public_suffix(domain) is expected


@pytest.mark.parametrize(
    ("pattern", "domain", "expected"),
    [
        ("example.com", "example.com", True),
        ("example.com", "EXAMPLE.com.", True),
        ("example.com", "a.example.com", False),
        ("example.com", "www.example.com", False),
        ("example.com", "notexample.com", False),
        ("*.example.com", "a.example.com", True),
        ("*.example.com", "a.b.example.com", True),
        ("*.example.com", "example.com", False),  # the suffix glob never covers the bare domain
        ("*.example.com", "badexample.com", False),
        ("*.example.com", "example.com.evil.net", False),
        ("*.example.com", "", False),
        ("example.com", "ü..com", False),
    ],
)
def test_pattern_matches(pattern: str, domain: str, expected: bool) -> None:
    assert pattern_matches(pattern, domain) is expected


def test_specificity_orders_exact_then_longest_suffix() -> None:
    patterns = ["*.example.com", "a.example.com", "*.b.example.com", "*.com"]
    ranked = sorted(patterns, key=pattern_specificity, reverse=True)
    assert ranked == ["a.example.com", "*.b.example.com", "*.example.com", "*.com"]
    assert pattern_specificity("example.com") == (1, 11)
    assert pattern_specificity("*.example.com") == (0, 11)


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: str
    updated_at: str


def choose(domain: str, rules: list[Rule]) -> str | None:
    rule = choose_rule(domain, rules, lambda r: r.pattern, lambda r: r.updated_at)
    return rule.name if rule else None


def test_exact_rule_beats_suffix_even_when_older() -> None:
    rules = [
        Rule("suffix-new", "*.example.com", "2025-06-01T00:00:00Z"),
        Rule("exact-old", "a.example.com", "2020-01-01T00:00:00Z"),
        Rule("long-suffix-new", "*.a.example.com", "2025-06-02T00:00:00Z"),
    ]
    assert choose("a.example.com", rules) == "exact-old"


def test_longer_suffix_beats_shorter_suffix() -> None:
    rules = [
        Rule("short-new", "*.example.com", "2025-06-01T00:00:00Z"),
        Rule("long-old", "*.b.example.com", "2020-01-01T00:00:00Z"),
    ]
    assert choose("a.b.example.com", rules) == "long-old"
    assert choose("c.example.com", rules) == "short-new"


def test_newest_wins_between_equally_specific_rules() -> None:
    rules = [
        Rule("old", "*.example.com", "2024-01-01T00:00:00Z"),
        Rule("new", "*.example.com", "2024-03-01T12:00:00Z"),
        Rule("middle", "*.example.com", "2024-02-01T00:00:00Z"),
    ]
    assert choose("x.example.com", rules) == "new"
    exact = [Rule("first", "x.example.com", "2024-01-01T00:00:00Z"), Rule("second", "x.example.com", "2024-01-02")]
    assert choose("x.example.com", exact) == "second"


def test_complete_tie_keeps_the_earlier_rule() -> None:
    rules = [Rule("first", "*.example.com", "2024-01-01"), Rule("second", "*.example.com", "2024-01-01")]
    assert choose("x.example.com", rules) == "first"


def test_no_matching_rule() -> None:
    rules = [Rule("r", "*.example.com", "2024-01-01"), Rule("s", "other.org", "2024-01-01")]
    assert choose("example.com", rules) is None
    assert choose("example.net", []) is None
