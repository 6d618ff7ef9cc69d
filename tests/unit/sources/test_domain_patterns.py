"""Domain patterns: validation table, matching, rule priority, public suffixes and IDN (pure code, no database)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lyra.core.errors import InvalidInputError
from lyra.sources.domain_patterns import (
    PatternIndex,
    choose_rule,
    is_public_suffix,
    lift_host,
    normalise_domain,
    pattern_matches,
    pattern_specificity,
    validate_pattern,
)
from lyra.sources.domain_policy import (
    CATEGORY_NAMES,
    CategoryRule,
    DomainPolicy,
    DomainsConfig,
    PolitenessConfig,
    PolitenessRule,
)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("example.com", "example.com"),
        ("Example.COM.", "example.com"),
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
        ("   ", "U+0020 SPACE at position 1"),
        # refused, never trimmed or dropped: the name a person sees must be the name Lyra uses
        ("example.org\n", "U+000A LINE FEED at position 12"),
        ("  Example.COM.  ", "U+0020 SPACE at position 1"),
        ("exa\u200bmple.org", "U+200B ZERO WIDTH SPACE at position 4"),
        ("\u00adexample.org", "U+00AD SOFT HYPHEN at position 1"),
        ("example.org\u3000", "U+3000 IDEOGRAPHIC SPACE at position 12"),
        ("*.exa\u200dmple.org", "U+200D ZERO WIDTH JOINER at position 6"),
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
        ("exa mple.com", "U+0020 SPACE at position 4"),
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


@pytest.mark.parametrize(
    ("value", "host"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("localhost", "localhost"),
        ("intranet", "intranet"),
        ("github.io", "github.io"),
        ("com", "com"),
        ("LocalHost.", "localhost"),
        ("www.example.org", "example.org"),
    ],
)
def test_lift_host_names_one_exact_host_that_only_a_lift_accepts(value: str, host: str) -> None:
    assert lift_host(value) == host


@pytest.mark.parametrize(
    "value", ["*.com", "*", "127.0.0.1:8080", "http://localhost", "local host", "localhost\n", "loc\u200bal", "::1", ""]
)
def test_lift_host_refuses_wildcards_urls_ports_and_hidden_characters(value: str) -> None:
    assert lift_host(value) is None


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


# -- the one matcher: PatternIndex ------------------------------------------------------------------------------


def test_index_prefers_the_exact_entry_then_the_longest_suffix() -> None:
    index = PatternIndex([("*.example.com", "short"), ("*.b.example.com", "long"), ("a.b.example.com", "exact")])
    assert index.lookup("a.b.example.com") == ("a.b.example.com", "exact")
    assert index.lookup("c.b.example.com") == ("*.b.example.com", "long")
    assert index.lookup("x.y.example.com") == ("*.example.com", "short")
    assert index.find("b.example.com") == "short"


def test_index_suffix_glob_does_not_match_the_bare_domain() -> None:
    index = PatternIndex([("*.example.com", 1)])
    assert index.find("example.com") is None
    assert index.find("badexample.com") is None
    assert index.find("") is None


def test_index_keys_are_used_as_given_so_www_is_the_callers_business() -> None:
    index = PatternIndex([("example.com", 1)])
    assert index.find("www.example.com") is None
    assert index.find("EXAMPLE.com") is None  # callers normalise first


def test_index_replaces_a_repeated_pattern_unless_told_how_to_merge() -> None:
    replacing = PatternIndex([("example.com", 1), ("example.com", 2)])
    assert replacing.find("example.com") == 2
    keeping_max = PatternIndex([("*.example.com", 5), ("*.example.com", 3)], merge=max)
    assert keeping_max.find("a.example.com") == 5


@pytest.mark.parametrize("pattern", ["", "*."])
def test_index_refuses_a_pattern_without_a_domain(pattern: str) -> None:
    with pytest.raises(ValueError, match="names no domain"):
        PatternIndex[int]().add(pattern, 1)


def test_choose_rule_ignores_patterns_that_cannot_be_normalised() -> None:
    rules = [Rule("broken", "ü..com", "2025-01-01"), Rule("ok", "*.com", "2024-01-01")]
    assert choose("x.com", rules) == "ok"
    assert choose("ü..com", rules) is None


# A small alphabet, so that generated patterns and domains collide often; "com" and single labels bring in
# public suffixes, which the category and politeness tables accept.
LABELS = st.sampled_from(["a", "b", "c", "com"])
PATTERNS = st.builds(
    lambda glob, labels: ("*." if glob else "") + ".".join(labels),
    st.booleans(),
    st.lists(LABELS, min_size=1, max_size=3),
).map(lambda raw: validate_pattern(raw, allow_public_suffix=True))
DOMAINS = st.lists(LABELS, min_size=1, max_size=4).map(".".join)
TIMES = st.sampled_from(["2024-01-01T00:00:00Z", "2024-06-01T00:00:00Z", "2025-01-01T00:00:00Z"])


def brute_force_winner(domain: str, patterns: list[str]) -> str | None:
    """The rule stated one pattern at a time: every pattern that matches, the most specific one."""
    matching = {pattern for pattern in patterns if pattern_matches(pattern, domain)}
    # Distinct matching patterns are never equally specific, so "the most specific" is one pattern.
    assert len({pattern_specificity(pattern) for pattern in matching}) == len(matching)
    return max(matching, key=pattern_specificity, default=None)


def reference_choose_rule(domain: str, rules: list[Rule]) -> Rule | None:
    """choose_rule as a plain scan: (specificity, updated_at) highest, the earlier rule on a complete tie."""
    best: Rule | None = None
    best_key: tuple[tuple[int, int], str] | None = None
    for rule in rules:
        if pattern_matches(rule.pattern, domain):
            key = (pattern_specificity(rule.pattern), rule.updated_at)
            if best_key is None or key > best_key:
                best, best_key = rule, key
    return best


@given(st.lists(PATTERNS, max_size=12), DOMAINS)
def test_index_answers_like_the_brute_force_reference(patterns: list[str], domain: str) -> None:
    expected = brute_force_winner(domain, patterns)
    index = PatternIndex((pattern, pattern) for pattern in patterns)
    assert index.find(domain) == expected
    assert index.lookup(domain) == (None if expected is None else (expected, expected))


@given(st.lists(st.tuples(PATTERNS, TIMES), max_size=12), DOMAINS)
def test_choose_rule_answers_like_the_plain_scan(entries: list[tuple[str, str]], domain: str) -> None:
    rules = [Rule(f"rule{i}", pattern, updated_at) for i, (pattern, updated_at) in enumerate(entries)]
    assert choose_rule(domain, rules, lambda r: r.pattern, lambda r: r.updated_at) is reference_choose_rule(
        domain, rules
    )


@given(st.lists(st.tuples(PATTERNS, TIMES), max_size=12), DOMAINS)
def test_choose_rule_and_domain_policy_pick_the_same_pattern(entries: list[tuple[str, str]], domain: str) -> None:
    rules = [Rule(f"rule{i}", pattern, updated_at) for i, (pattern, updated_at) in enumerate(entries)]
    chosen = choose_rule(domain, rules, lambda r: r.pattern, lambda r: r.updated_at)
    winner = chosen.pattern if chosen else None
    assert winner == brute_force_winner(domain, [rule.pattern for rule in rules])

    patterns = list(dict.fromkeys(pattern for pattern, _ in entries))  # each table lists a pattern once
    category_of = {pattern: CATEGORY_NAMES[i % len(CATEGORY_NAMES)] for i, pattern in enumerate(patterns)}
    deniable = [pattern for pattern in patterns if not is_public_suffix(pattern.removeprefix("*."))]
    deniable = [pattern for pattern in deniable if "." in pattern.removeprefix("*.")]
    policy = DomainPolicy(
        DomainsConfig(
            categories=dict.fromkeys(CATEGORY_NAMES, 0.5),
            domains=[CategoryRule(domain=pattern, category=category_of[pattern]) for pattern in patterns],
            # qps = position + 1 tells which entry the policy picked
            politeness=PolitenessConfig(
                domains=[PolitenessRule(domain=pattern, qps=i + 1.0) for i, pattern in enumerate(patterns)]
            ),
            denylist=deniable,
        )
    )

    politeness = policy.politeness(domain)
    picked = patterns[int(politeness.qps) - 1] if politeness.source == "domain" else None
    assert picked == winner
    assert policy.original_category(domain) == (category_of[winner] if winner else policy.config.default_category)
    deny_chosen = choose_rule(
        domain, [rule for rule in rules if rule.pattern in deniable], lambda r: r.pattern, lambda r: r.updated_at
    )
    assert policy.denylist_match(domain) == (deny_chosen.pattern if deny_chosen else None)
