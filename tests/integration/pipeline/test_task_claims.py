"""A task holds each claim once, on every path that adds claims (TaskService, create_task, add_claims, extraction)."""

from __future__ import annotations

import threading

import pytest

from lyra.bootstrap import Services
from lyra.core.errors import InvalidInputError, NotFoundError
from lyra.models.api import AddClaimsRequest, CreateTaskRequest, TaskConfig
from tests.support.helpers import seed_fragments

pytestmark = pytest.mark.neo4j


def claim_texts(services: Services, task_id: str) -> list[str]:
    return [row["text"] for row in services.store.run("tasks/task_claims", {"task_id": task_id})]


def test_a_claim_added_again_in_other_case_spacing_or_final_punctuation_returns_the_existing_claim(
    graph: Services,
) -> None:
    created = graph.tasks.create_task("once", "Vitamin D reduces falls.")
    (hypothesis,) = created["claim_ids"]
    for _ in range(3):  # one corpus ingested file by file adds the same --claim each time
        added = graph.tasks.add_claims_reported(
            "once", ["vitamin  D reduces FALLS", "Coffee helps sleep", "coffee helps sleep!"]
        )
        assert added[0].claim_id == hypothesis and added[0].text == "Vitamin D reduces falls." and not added[0].created
        assert added[2].claim_id == added[1].claim_id and not added[2].created
    assert claim_texts(graph, "once") == ["Vitamin D reduces falls.", "Coffee helps sleep"]
    assert graph.tasks.list_tasks()[0]["claims"] == 2


def test_the_first_add_reports_the_claim_created_and_the_next_reports_it_held(graph: Services) -> None:
    graph.tasks.create_task("reported", "Tea lowers blood pressure", hypothesis_as_claim=False)
    first = graph.operations.add_claims(
        AddClaimsRequest(task_id="reported", claims=["Tea calms", "Tea lowers blood pressure"])
    )
    assert (first.created, first.existing) == (2, 0) and all(c.created for c in first.claims)
    again = graph.operations.add_claims(AddClaimsRequest(task_id="reported", claims=["TEA CALMS.", "Tea wakes"]))
    assert (again.created, again.existing) == (1, 1)
    assert again.claims[0].claim_id == first.claims[0].claim_id and again.claims[0].text == "Tea calms"
    assert [c.created for c in again.claims] == [False, True]


def test_create_task_holds_a_claim_given_twice_once(graph: Services) -> None:
    config = TaskConfig(task_id="twice", claims=["tea lowers blood pressure.", "Tea calms", "tea calms"])
    created = graph.operations.create_task(CreateTaskRequest(hypothesis="Tea lowers blood pressure", config=config))
    assert len(created.claim_ids) == 2
    assert claim_texts(graph, "twice") == ["Tea lowers blood pressure", "Tea calms"]
    assert created.duplicates_ignored == ["tea lowers blood pressure.", "tea calms"]
    assert any("duplicates_ignored" in note for note in created.notes)


def test_create_task_with_the_same_claim_twice_makes_one_claim_and_says_so(graph: Services) -> None:
    """config.claims ["X", "X"] made two identical claims."""
    config = TaskConfig(task_id="same_twice", claims=["Tea calms", "Tea calms"], hypothesis_as_claim=False)
    created = graph.operations.create_task(CreateTaskRequest(hypothesis="About tea", config=config))
    assert len(created.claim_ids) == 1 and claim_texts(graph, "same_twice") == ["Tea calms"]
    assert created.duplicates_ignored == ["Tea calms"]
    single = graph.operations.create_task(
        CreateTaskRequest(hypothesis="About coffee", config=TaskConfig(task_id="single", claims=["Coffee wakes"]))
    )
    assert single.duplicates_ignored == [] and not any("duplicates_ignored" in n for n in single.notes)


def test_concurrent_adds_of_the_same_claim_make_one_claim(graph: Services) -> None:
    graph.tasks.create_task("racing", "A hypothesis", hypothesis_as_claim=False)
    ids: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def add(text: str) -> None:
        start.wait()
        try:
            ids.extend(graph.tasks.add_claims("racing", [text]))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=add, args=(t,)) for t in ("Same claim", "same claim.", "SAME CLAIM", "Same claim")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(set(ids)) == 1
    assert len(claim_texts(graph, "racing")) == 1


def test_an_extracted_claim_the_task_holds_is_not_written_again_nor_linked(graph: Services) -> None:
    graph.tasks.create_task("extracted", "Vitamin D reduces falls")
    (fragment,) = seed_fragments(graph, 1)
    added = graph.tasks.add_claims_reported(
        "extracted", ["vitamin d reduces falls.", "Calcium reduces falls"], [[fragment], [fragment]], rules_version=1
    )
    assert [c.created for c in added] == [False, True]
    links = graph.store.driver.execute_query(
        "MATCH (c:Claim {task_id: 'extracted'})-[:EXTRACTED_FROM]->(f:Fragment) RETURN c.text AS text",
        database_=graph.store.database,
    ).records
    assert [r["text"] for r in links] == ["Calcium reduces falls"]


def test_an_unknown_task_or_fragment_or_an_empty_claim_is_refused_and_nothing_is_written(graph: Services) -> None:
    graph.tasks.create_task("refusing", "A hypothesis", hypothesis_as_claim=False)
    with pytest.raises(NotFoundError, match="no_such_task"):
        graph.tasks.add_claims("no_such_task", ["A claim"])
    with pytest.raises(NotFoundError, match="frg_missing"):
        graph.tasks.add_claims("refusing", ["A claim", "Another"], [[], ["frg_missing"]])
    with pytest.raises(InvalidInputError) as empty:
        graph.tasks.add_claims("refusing", ["A claim", "  "])
    assert empty.value.field == "claims[1].text"
    assert claim_texts(graph, "refusing") == []
