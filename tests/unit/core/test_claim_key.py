"""claim_key: when two texts are the same claim of a task (case, whitespace and trailing punctuation do not count)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lyra.core.text import claim_key


def test_case_whitespace_and_trailing_punctuation_do_not_make_another_claim() -> None:
    key = claim_key("Vitamin D reduces falls.")
    assert claim_key("vitamin d reduces falls") == key
    assert claim_key("  VITAMIN\tD   reduces\nfalls !") == key
    assert claim_key("Vitamin D reduces falls?") == key
    assert claim_key("Ｖitamin D reduces falls…") == key  # a full-width letter (NFKC) and an ellipsis


def test_words_and_inner_punctuation_still_tell_claims_apart() -> None:
    assert claim_key("Vitamin D reduces falls.") != claim_key("Vitamin D reduces fractures.")
    assert claim_key("Vitamin D, not calcium, reduces falls") != claim_key("Vitamin D not calcium reduces falls")
    assert claim_key("Drug A lowers risk by 2.5%") != claim_key("Drug A lowers risk by 25%")


@given(st.text(max_size=80))
def test_the_key_is_its_own_key_and_ignores_surrounding_space(text: str) -> None:
    key = claim_key(text)
    assert claim_key(key) == key
    assert claim_key(f"  {text} \n") == key
