"""Reading a graph written by someone else: a Task made by hand in Neo4j Browser, with values Lyra never writes."""

from __future__ import annotations

import pytest

from lyra.bootstrap import Services
from lyra.core.errors import InvalidGraphDataError
from lyra.models.api import GetMaterialsRequest, GetStatusRequest

pytestmark = pytest.mark.neo4j
TASK = "browser_task"


def create_by_hand(services: Services, **properties: object) -> None:
    """A Task and one claim (HAS_CLAIM, per-task label) as a person would type them into Neo4j Browser."""
    services.store.driver.execute_query(
        "CREATE (t:Task {id: $task_id}) SET t += $properties "
        "CREATE (c:Claim:Task_browser_task {id: 'claim_by_hand', task_id: $task_id, text: 'Tea is a drink'}) "
        "CREATE (t)-[:HAS_CLAIM]->(c)",
        task_id=TASK,
        properties=properties,
        database_=services.store.database,
    )


@pytest.fixture
def foreign_task(graph: Services) -> Services:
    create_by_hand(graph, hypothesis="Tea is good for you", status="active", created_at="2024-01-01")
    return graph


def test_a_task_with_an_unknown_status_and_a_string_timestamp_reads_as_given(foreign_task: Services) -> None:
    task = foreign_task.task_repo.get(TASK)
    assert task == {
        "id": TASK,
        "hypothesis": "Tea is good for you",
        "status": "active",
        "created_at": "2024-01-01",
        "updated_at": None,
    }
    assert foreign_task.task_repo.exists(TASK)


def test_the_task_list_shows_the_foreign_task_next_to_a_lyra_task(foreign_task: Services) -> None:
    foreign_task.tasks.create_task("lyra_task", "Made by Lyra")
    listed = {t["id"]: t for t in foreign_task.task_repo.list()}
    assert listed[TASK]["status"] == "active" and listed[TASK]["created_at"] == "2024-01-01"
    assert listed[TASK]["claims"] == 1
    assert listed["lyra_task"]["status"] == "created"
    assert str(listed["lyra_task"]["created_at"]).startswith("20")  # a Neo4j datetime, as an ISO-8601 string


def test_materials_of_the_foreign_task_show_its_status_and_claim(foreign_task: Services) -> None:
    materials = foreign_task.operations.get_materials(GetMaterialsRequest(task_id=TASK))
    assert materials.status == "active" and materials.hypothesis == "Tea is good for you"
    assert [c.text for c in materials.claims] == ["Tea is a drink"]


def test_status_of_the_foreign_task_shows_its_status_and_no_idle_time(foreign_task: Services) -> None:
    status = foreign_task.operations.get_status(GetStatusRequest(task_id=TASK))
    assert status.status == "active" and status.metrics.claims == 1
    assert status.idle_seconds is None  # its only timestamp is a string Neo4j cannot compare with now


def test_a_temporal_timestamp_written_by_hand_is_shown_as_iso_8601(graph: Services) -> None:
    graph.store.driver.execute_query(
        "CREATE (:Task {id: $task_id, hypothesis: 'h', created_at: datetime('2024-01-01T10:00:00Z'), "
        "updated_at: date('2024-02-01')})",
        task_id=TASK,
        database_=graph.store.database,
    )
    task = graph.task_repo.get(TASK)
    assert (task["status"], task["updated_at"]) == ("unknown", "2024-02-01")
    assert task["created_at"].startswith("2024-01-01T10:00:00")
    assert graph.operations.get_status(GetStatusRequest(task_id=TASK)).idle_seconds is not None


def test_a_task_without_a_hypothesis_is_a_clear_error_naming_the_node_and_the_property(graph: Services) -> None:
    create_by_hand(graph, status="active")
    for read in (
        lambda: graph.task_repo.get(TASK),
        graph.task_repo.list,
        lambda: graph.operations.get_status(GetStatusRequest(task_id=TASK)),
        lambda: graph.operations.get_materials(GetMaterialsRequest(task_id=TASK)),
    ):
        with pytest.raises(InvalidGraphDataError, match=r"Task node with id 'browser_task' has no 'hypothesis'"):
            read()
    assert graph.task_repo.exists(TASK)


def test_a_task_without_a_hypothesis_can_still_be_cleaned_up(graph: Services) -> None:
    create_by_hand(graph)
    report = graph.cleanup.cleanup(TASK, "soft")
    assert (report.removed.tasks, report.removed.claims) == (1, 1)
