"""The domain policy loader: validation errors, precedence, hot reload, and the shipped config (no database)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from lyra.core.errors import ConfigError, InvalidInputError
from lyra.sources.domain_policy import DomainPolicy, ReloadingDomainPolicy

ROOT = Path(__file__).resolve().parents[3]

CATEGORIES = """\
categories:
  primary: 1.0
  government: 0.95
  academic: 0.90
  trusted: 0.75
  low: 0.40
  unverified: 0.30
  blocked: 0.0
"""

BASE = (
    CATEGORIES
    + """\
default_category: unverified
domains:
  - {domain: "*.gov", category: government}
  - {domain: "*.data.gov", category: low}
  - {domain: "open.data.gov", category: academic}
  - {domain: "example.org", category: trusted}
  - {domain: "bad.example", category: blocked}
politeness:
  default: {qps: 1.0, max_pages_per_day: 500}
  domains:
    - {domain: "*.example.org", qps: 0.5}
    - {domain: "slow.example.org", qps: 0.1, max_pages_per_day: 20}
    - {domain: "example.org", max_pages_per_day: 100}
denylist:
  - "malware.example"
  - "*.spam.example"
  - "*.deep.spam.example"
"""
)


def write(tmp_path: Path, text: str, name: str = "domains.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def policy_with(tmp_path: Path, overrides: str = "user_overrides: []\n") -> DomainPolicy:
    return DomainPolicy.load(write(tmp_path, BASE + overrides))


def load_error(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        DomainPolicy.load(path)
    return caught.value.message


# -- loading errors name the entry and the field -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            "user_overrides:\n  - {domain: a.example.com, qps: 1}\n  - {domain: b.example.com, qps: 1}\n"
            "  - {domain: '*.c.example.com', qps: 1}\n",
            "user_overrides[2].domain: wildcards are not allowed here",
        ),
        (
            "user_overrides:\n  - {domain: a.example.com, domain_category: blocked}\n",
            "user_overrides[0].domain_category",
        ),
        ("user_overrides:\n  - {domain: a.example.com, domain_category: great}\n", "user_overrides[0].domain_category"),
        ("user_overrides:\n  - {domain: a.example.com, reason: just because}\n", "user_overrides[0]: "),
        ("user_overrides:\n  - {domain: a.example.com, qps: 0}\n", "user_overrides[0].qps"),
        ("user_overrides:\n  - {domain: a.example.com, colour: red}\n", "user_overrides[0].colour: Extra inputs"),
        ("user_overrides:\n  - {domain: 'https://a.example.com', qps: 1}\n", "user_overrides[0].domain: "),
        ("user_overrides:\n  - {domain: www.a.example.com, qps: 1}\n", "user_overrides[0].domain: write 'a.example"),
        (
            "user_overrides:\n  - {domain: x.bad.example, qps: 1}\n  - {domain: bad.example, qps: 1}\n",
            "user_overrides[1].domain: 'bad.example' is blocked",
        ),
        (
            "user_overrides:\n  - {domain: a.example.com, qps: 1}\n  - {domain: A.example.com., qps: 2}\n",
            "user_overrides[1].domain: 'a.example.com' is already listed at user_overrides[0]",
        ),
    ],
)
def test_override_errors_name_entry_and_field(tmp_path: Path, extra: str, expected: str) -> None:
    message = load_error(tmp_path, BASE + extra)
    assert expected in message
    assert message.startswith(f"{tmp_path / 'domains.yaml'}: ")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (CATEGORIES.replace("  low: 0.40\n", ""), "categories: missing low"),
        (CATEGORIES + "  shiny: 0.4\n", "categories: unknown shiny"),
        (CATEGORIES.replace("low: 0.40", "low: 1.5"), "categories: the weight of 'low' must be between 0 and 1"),
        (CATEGORIES + "default_category: nice\n", "default_category: Input should be"),
        (
            CATEGORIES + "domains:\n  - {domain: a.com, category: low}\n  - {domain: 'ex*ample.com', category: low}\n",
            "domains[1].domain: 'ex*ample.com': '*' is only allowed",
        ),
        (CATEGORIES + "domains:\n  - {domain: a.com, category: nice}\n", "domains[0].category"),
        (CATEGORIES + "domains:\n  - {domain: a.com}\n", "domains[0].category: Field required"),
        (
            CATEGORIES + "domains:\n  - {domain: a.com, category: low}\n  - {domain: A.com, category: academic}\n",
            "domains[1].domain: 'a.com' is already listed at domains[0]",
        ),
        (CATEGORIES + "politeness: {default: {qps: 0, max_pages_per_day: 10}}\n", "politeness.default.qps"),
        (
            CATEGORIES + "politeness: {default: {qps: 1, max_pages_per_day: 0}}\n",
            "politeness.default.max_pages_per_day",
        ),
        (CATEGORIES + "politeness: {domains: [{domain: a.com}]}\n", "politeness.domains[0]: set qps and/or"),
        (CATEGORIES + "politeness: {domains: [{domain: a.com, qps: -1}]}\n", "politeness.domains[0].qps"),
        (CATEGORIES + "politeness: {burst: 3}\n", "politeness.burst: Extra inputs"),
        (CATEGORIES + "denylist: ['ok.example', '*.com']\n", "denylist[1]: '*.com' would cover every domain"),
        (CATEGORIES + "denylist: ['ok.example', 'github.io']\n", "denylist[1]: 'github.io' is a public suffix"),
        (CATEGORIES + "denylist: ['ok.example', 'ok.example']\n", "denylist[1]: 'ok.example' is already listed"),
        (CATEGORIES + "surprise: true\n", "surprise: Extra inputs are not permitted"),
        ("default_category: low\n", "categories: Field required"),
        ("- just\n- a list\n", "the top level must be a mapping"),
        ("categories: [unclosed\n", "cannot read"),
    ],
)
def test_config_errors_name_entry_and_field(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in load_error(tmp_path, text)


def test_several_errors_are_all_reported(tmp_path: Path) -> None:
    message = load_error(tmp_path, CATEGORIES + "domains:\n  - {domain: '*', category: low}\ndenylist: ['*.co.jp']\n")
    assert "domains[0].domain" in message and "denylist[0]" in message


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        DomainPolicy.load(tmp_path / "nope.yaml")


# -- lookups ----------------------------------------------------------------------------------------------------


def test_categories_exact_then_longest_suffix_then_default(tmp_path: Path) -> None:
    policy = policy_with(tmp_path)
    assert policy.category("www.nih.gov") == "government"
    assert policy.category("x.data.gov") == "low"
    assert policy.category("open.data.gov") == "academic"
    assert policy.category("WWW.Example.ORG.") == "trusted"
    assert policy.category("sub.example.org") == "unverified"  # exact rules do not cover subdomains
    assert policy.category("example.com") == "unverified"
    assert policy.category("ü..com") == "unverified"
    assert policy.weight("government") == 0.95
    with pytest.raises(InvalidInputError, match="unknown category"):
        policy.weight("shiny")


def test_user_override_changes_category_and_politeness_only(tmp_path: Path) -> None:
    policy = policy_with(
        tmp_path,
        "user_overrides:\n"
        "  - {domain: example.org, domain_category: primary, qps: 2.0, reason: 'my own site'}\n"
        "  - {domain: x.data.gov, max_pages_per_day: 7}\n"
        "  - {domain: malware.example, domain_category: trusted}\n",
    )
    assert policy.category("www.example.org") == "primary"
    assert policy.original_category("www.example.org") == "trusted"
    override = policy.user_override("example.org")
    assert override is not None and override.reason == "my own site"
    assert policy.user_override("sub.example.org") is None  # exact match only
    assert policy.category("sub.example.org") == "unverified"

    # qps from the override, max_pages_per_day from the domain rule: the override is the top layer used
    polite = policy.politeness("example.org")
    assert (polite.qps, polite.max_pages_per_day, polite.source) == (2.0, 100, "user_override")
    polite = policy.politeness("x.data.gov")
    assert (polite.qps, polite.max_pages_per_day, polite.source) == (1.0, 7, "user_override")
    assert policy.category("x.data.gov") == "low"  # no domain_category in that override

    # an override never unblocks: the denylist ignores it
    assert policy.category("malware.example") == "trusted"
    assert policy.denylist_match("malware.example") == "malware.example"


def test_politeness_layers(tmp_path: Path) -> None:
    policy = policy_with(tmp_path)
    cases = {
        "a.example.org": (0.5, 500, "domain"),  # suffix rule, pages from the default
        "slow.example.org": (0.1, 20, "domain"),  # exact beats suffix
        "example.org": (1.0, 100, "domain"),  # the suffix rule does not cover the bare domain
        "elsewhere.net": (1.0, 500, "default"),
    }
    for domain, expected in cases.items():
        polite = policy.politeness(domain)
        assert (polite.qps, polite.max_pages_per_day, polite.source) == expected, domain


def test_denylist_exact_means_exact(tmp_path: Path) -> None:
    policy = policy_with(tmp_path)
    assert policy.denylist_match("malware.example") == "malware.example"
    assert policy.denylist_match("www.malware.example") == "malware.example"
    assert policy.denylist_match("cdn.malware.example") is None
    assert policy.denylist_match("a.spam.example") == "*.spam.example"
    assert policy.denylist_match("a.deep.spam.example") == "*.deep.spam.example"
    assert policy.denylist_match("spam.example") is None
    assert policy.denylist_match("fine.example") is None


def test_version_and_loaded_at(tmp_path: Path) -> None:
    policy = policy_with(tmp_path)
    assert policy.version == 1
    assert policy.loaded_at.tzinfo is not None


# -- hot reload -------------------------------------------------------------------------------------------------


def rewrite(path: Path, text: str, bump: int) -> None:
    path.write_text(text, encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + bump * 1_000_000_000))


OVERRIDE_LOW = "user_overrides:\n  - {domain: news.example.net, domain_category: low}\n"
OVERRIDE_TRUSTED = "user_overrides:\n  - {domain: news.example.net, domain_category: trusted, qps: 0.25}\n"


def test_hot_reload_sees_edits_without_a_new_object(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + OVERRIDE_LOW)
    live = ReloadingDomainPolicy(path, check_interval=0)
    assert live.category("news.example.net") == "low"
    assert live.version == 1

    rewrite(path, BASE + OVERRIDE_TRUSTED, bump=5)
    assert live.category("news.example.net") == "trusted"
    assert live.politeness("news.example.net").qps == 0.25
    assert live.version == 2
    assert live.last_error is None
    assert live.current().user_override("news.example.net") is not None


def test_broken_rewrite_keeps_the_previous_policy(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write(tmp_path, BASE + OVERRIDE_LOW)
    live = ReloadingDomainPolicy(path, check_interval=0)
    before = live.current()

    broken = BASE + "user_overrides:\n  - {domain: '*.example.net', domain_category: trusted}\n"
    with caplog.at_level(logging.ERROR, logger="lyra.sources.domain_policy"):
        rewrite(path, broken, bump=5)
        assert live.category("news.example.net") == "low"
    assert live.current() is before
    assert live.version == 1
    assert live.last_error is not None
    assert "user_overrides[0].domain: wildcards are not allowed here" in live.last_error
    assert "wildcards are not allowed here" in caplog.text

    rewrite(path, "categories: [oops\n", bump=10)  # not even YAML
    assert live.category("news.example.net") == "low"
    assert live.last_error is not None and "cannot read" in live.last_error

    rewrite(path, BASE + OVERRIDE_TRUSTED, bump=15)  # fixed: picked up, error cleared
    assert live.category("news.example.net") == "trusted"
    assert live.last_error is None
    assert live.version == 2


def test_deleted_file_keeps_the_policy(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + OVERRIDE_LOW)
    live = ReloadingDomainPolicy(path, check_interval=0)
    path.unlink()
    assert live.category("news.example.net") == "low"
    assert live.last_error is not None and "cannot stat" in live.last_error


def test_check_interval_limits_stat_calls(tmp_path: Path) -> None:
    now = [100.0]
    path = write(tmp_path, BASE + OVERRIDE_LOW)
    live = ReloadingDomainPolicy(path, check_interval=1.0, clock=lambda: now[0])
    rewrite(path, BASE + OVERRIDE_TRUSTED, bump=5)
    now[0] += 0.5
    assert live.category("news.example.net") == "low"  # not checked yet
    now[0] += 0.6
    assert live.category("news.example.net") == "trusted"


def test_first_load_failure_raises(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        ReloadingDomainPolicy(write(tmp_path, "categories: {}\n"), check_interval=0)


# -- the shipped file -------------------------------------------------------------------------------------------


def test_shipped_config_loads() -> None:
    policy = DomainPolicy.load(ROOT / "config/domains.yaml")
    assert policy.category("www.arxiv.org") == "academic"
    assert policy.category("cs.stanford.edu") == "academic"
    assert policy.category("www.nasa.gov") == "government"
    assert policy.category("local") == "unverified"
    assert policy.category("unknown.example.net") == policy.config.default_category
    assert policy.weight("blocked") == 0.0
    assert policy.politeness("arxiv.org").qps == 0.5
    assert policy.politeness("elsewhere.net").source == "default"
    assert policy.denylist_match("malware.example") == "malware.example"
    assert policy.denylist_match("x.spam.example") == "*.spam.example"
    assert policy.config.user_overrides == []


def test_shipped_category_weights_are_the_seed_values_with_low_above_unverified() -> None:
    policy = DomainPolicy.load(ROOT / "config/domains.yaml")
    seed = {
        "primary": 1.0,
        "government": 0.95,
        "academic": 0.90,
        "trusted": 0.75,
        "low": 0.40,
        "unverified": 0.30,
        "blocked": 0.0,
    }
    assert {name: policy.weight(name) for name in seed} == seed
    assert policy.weight("low") > policy.weight("unverified")  # low = promoted from unverified after verification
