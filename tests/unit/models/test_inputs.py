"""Input validation without a database: ids, edges, pages — errors name the field."""

from __future__ import annotations

import pytest

from lyra.core.errors import InvalidInputError
from lyra.core.ids import task_label, text_hash, validate_task_id
from lyra.core.net import domain_syntax_error
from lyra.models.api import CreateTaskRequest, GetEvidenceGraphRequest, GetStatusRequest, QueryViewRequest
from lyra.models.graph import PageIn, StanceEdgeIn
from lyra.models.trust import ARGS_FOR_ACTION, CheckDomainRequest, ClaimRejectArgs, PageUnblockArgs
from lyra.models.validation import parse_many, parse_one
from lyra.sources.domain_patterns import validate_pattern
from lyra.sources.domain_policy import DomainsConfig


@pytest.mark.parametrize("bad", ["", "ab", "A_task", "1task", "task-1", "x" * 65, "tâche", None, 12])
def test_invalid_task_ids_are_refused(bad: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        validate_task_id(bad)
    assert info.value.field == "task_id"


@pytest.mark.parametrize("good", ["abc", "vitamin_d_2024", "a" + "b" * 63])
def test_valid_task_ids_pass_and_give_a_safe_label(good: str) -> None:
    assert validate_task_id(good) == good
    assert task_label(good) == f"Task_{good}"


def test_text_hash_ignores_whitespace_layout() -> None:
    assert text_hash("a  b\n c") == text_hash("a b c")
    assert text_hash("a b c") != text_hash("a b d")


def edge(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "fragment_id": "f",
        "claim_id": "c",
        "relation": "SUPPORTS",
        "nli_confidence": 0.5,
    }
    base.update(over)
    return base


@pytest.mark.parametrize("value", [-0.01, 1.01, float("nan"), float("inf"), "high"])
def test_edge_confidence_outside_unit_interval_names_the_field(value: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        parse_many(StanceEdgeIn, [edge(), edge(nli_confidence=value)], "edges")
    assert info.value.field == "edges[1].nli_confidence"


def test_unknown_relation_names_the_field() -> None:
    with pytest.raises(InvalidInputError) as info:
        parse_many(StanceEdgeIn, [edge(relation="CONTRADICTS")], "edges")
    assert info.value.field == "edges[0].relation"


def test_label_must_agree_with_relation() -> None:
    with pytest.raises(InvalidInputError, match="does not match"):
        parse_one(StanceEdgeIn, edge(nli_label="contradiction"))
    assert parse_one(StanceEdgeIn, edge()).nli_label == "entailment"


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(InvalidInputError) as info:
        parse_one(StanceEdgeIn, edge(weight=2))
    assert info.value.field == "weight"


def test_page_domain_comes_from_url_and_doi_is_normalised() -> None:
    page = parse_one(PageIn, {"url": "https://www.Nature.com/x", "doi": "https://doi.org/10.1038/ABC"})
    assert page.domain == "nature.com"
    assert page.doi == "10.1038/abc"
    assert parse_one(PageIn, {"url": "file:///tmp/a.txt"}).domain == "local"
    with pytest.raises(InvalidInputError) as info:
        parse_one(PageIn, {"url": "https://a.org", "doi": "not-a-doi"}, "pages[0]")
    assert info.value.field == "pages[0].doi"


# ----------------------------------------------------------------------------- free text and domains
@pytest.mark.parametrize(
    "good", ["example.org", "sub.example.co.jp", "EXAMPLE.org.", "münchen.de", "_dmarc.example.org"]
)
def test_domain_names_pass_the_syntax_check(good: str) -> None:
    assert domain_syntax_error(good) is None
    assert parse_one(CheckDomainRequest, {"domain": good}).domain == good.strip()


@pytest.mark.parametrize(
    "bad",
    ["*", "*.example.org", "exa mple.org", "https://example.org", "example.org/x", "example.org:80", "a..b", "-a.org"],
)
def test_anything_but_a_domain_name_is_refused_by_check_domain(bad: str) -> None:
    assert domain_syntax_error(bad)
    with pytest.raises(InvalidInputError) as info:
        parse_one(CheckDomainRequest, {"domain": bad})
    assert info.value.field == "domain" and "not a domain name" in info.value.reason


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ("example.org\n", "U+000A LINE FEED at position 12"),
        ("exa\u200bmple.org", "U+200B ZERO WIDTH SPACE at position 4"),
        (" example.org", "U+0020 SPACE at position 1"),
        ("example.org\u2028", "U+2028 LINE SEPARATOR at position 12"),
    ],
)
def test_a_domain_with_hidden_characters_is_refused_never_normalised(bad: str, named: str) -> None:
    """Issue 28: "example.org\n" and "exa\u200bmple.org" were accepted as example.org; every input naming a domain
    refuses them, naming the field and the character."""
    with pytest.raises(InvalidInputError) as info:
        parse_one(CheckDomainRequest, {"domain": bad})
    assert info.value.field == "domain" and named in info.value.reason
    for action in ("domain_block", "domain_unblock", "domain_clear_override"):
        with pytest.raises(InvalidInputError) as info:
            parse_one(ARGS_FOR_ACTION[action], {"domain_pattern": bad, "reason": "r"})
        assert info.value.field == "domain_pattern" and named in info.value.reason
        with pytest.raises(InvalidInputError) as info:
            validate_pattern(bad)
        assert info.value.field == "args.domain_pattern" and named in info.value.reason


@pytest.mark.parametrize("text", ["\u0000", "a\u0007b", "two\nlines", "tab\there", "del\u007f", "c1\u0085x"])
def test_single_line_free_text_refuses_control_characters(text: str) -> None:
    with pytest.raises(InvalidInputError, match="control characters") as info:
        parse_one(CreateTaskRequest, {"hypothesis": text})
    assert info.value.field == "hypothesis"


def test_reasons_keep_line_breaks_but_refuse_other_control_characters() -> None:
    assert parse_one(ClaimRejectArgs, {"claim_id": "c1", "reason": "first\n\tsecond"}).reason == "first\n\tsecond"
    with pytest.raises(InvalidInputError) as info:
        parse_one(ClaimRejectArgs, {"claim_id": "c1", "reason": "bell\u0007"})
    assert info.value.field == "reason"


def test_view_parameters_holding_a_lone_surrogate_are_refused_with_its_place() -> None:
    # (query_graph's params are checked by the query door itself, which names the full path: test_query_door.py)
    with pytest.raises(InvalidInputError, match=r"at x\.y\[1\]") as info:
        parse_one(QueryViewRequest, {"name": "contradictions", "params": {"x": {"y": ["ok", "\ud800"]}}})
    assert info.value.field == "params"
    with pytest.raises(InvalidInputError, match=r"at k\\ud800") as info:  # the message itself stays encodable
        parse_one(QueryViewRequest, {"name": "contradictions", "params": {"k\ud800": 1}})
    info.value.message.encode("utf-8")


def test_strict_parsing_refuses_what_lax_parsing_would_convert() -> None:
    lax = parse_one(GetEvidenceGraphRequest, {"task_id": "abc", "limit": True})
    assert lax.limit == 1  # what REST query strings rely on: "5" -> 5
    for value in (True, 5.0, "5"):
        with pytest.raises(InvalidInputError) as info:
            parse_one(GetEvidenceGraphRequest, {"task_id": "abc", "limit": value}, strict=True)
        assert info.value.field == "limit"
    assert parse_one(GetStatusRequest, {"task_id": "abc", "wait": 3}, strict=True).wait == 3.0


@pytest.mark.parametrize("bad", ["example.org\n", "exa\u200bmple.org"])
def test_the_domains_config_refuses_hidden_characters_in_every_section(bad: str) -> None:
    for data in (
        {"domains": [{"domain": bad, "category": "trusted"}]},
        {"denylist": [bad]},
        {"politeness": {"domains": [{"domain": bad, "qps": 1.0}]}},
    ):
        with pytest.raises(ValueError, match="U\\+"):
            DomainsConfig.model_validate(data)


@pytest.mark.parametrize(
    "bad", ["example.org/page", "ftp://example.org/x", " https://example.org/x", "https://x.org/\n"]
)
def test_page_unblock_takes_one_http_or_file_url(bad: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        parse_one(PageUnblockArgs, {"url": bad, "reason": "r"})
    assert info.value.field == "url"
    assert parse_one(PageUnblockArgs, {"url": "file:///tmp/a.md", "reason": "r"}).url == "file:///tmp/a.md"
