"""linked_groups: which rows of one write belong together (shared identity or locked node, transitively)."""

from __future__ import annotations

from lyra.graph.evidence import linked_groups


def test_rows_sharing_a_token_transitively_form_one_group_in_input_order() -> None:
    tokens = [["url:a"], ["url:b", "doi:x"], ["url:c"], ["url:a", "doi:x"], ["url:d"], ["doi:y", "url:c"]]
    assert linked_groups(tokens) == [[0, 1, 3], [2, 5], [4]]


def test_rows_without_tokens_stand_alone() -> None:
    assert linked_groups([[], [], ["t"]]) == [[0], [1], [2]]
    assert linked_groups([]) == []


def test_a_long_chain_is_one_group() -> None:
    tokens = [[f"t{i}", f"t{i + 1}"] for i in range(2000)]
    assert linked_groups(tokens) == [list(range(2000))]
