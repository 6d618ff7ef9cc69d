"""Input validation without a database: ids, edges, pages — errors name the field."""

from __future__ import annotations

import pytest

from lyra.core.errors import InvalidInputError
from lyra.core.ids import task_label, text_hash, validate_task_id
from lyra.models.graph import PageIn, StanceEdgeIn
from lyra.models.validation import parse_many, parse_one


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
