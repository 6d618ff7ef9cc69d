"""Every MCP tool through the SDK's in-memory client, over the example graph in the real Neo4j."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from lyra.bootstrap import Services
from lyra.mcp.server import create_mcp_server
from lyra.models.api import GetMaterialsRequest
from lyra.services.graph_import import load_graph_file
from lyra.services.jobs import JobService

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[3]
TASK = "example_vitamin_d"
TOOLS = {
    "create_task": (False, False),
    "add_claims": (False, False),
    "queue_targets": (False, False),
    "queue_reference_candidates": (False, False),
    "get_status": (True, False),
    "get_job": (True, False),
    "get_auth_queue": (True, False),
    "resolve_auth": (False, False),
    "stop_task": (False, True),
    "judge_remaining": (False, False),
    "get_materials": (True, False),
    "get_evidence_graph": (True, False),
    "query_graph": (True, False),
    "list_views": (True, False),
    "query_view": (True, False),
    "vector_search": (True, False),
    "collect_garbage": (False, True),
    "feedback": (False, True),
    "check_domain": (True, False),
    "calibration_metrics": (False, False),
    "calibration_rollback": (False, False),
    "generate_proposals": (False, False),
    "list_proposals": (True, False),
    "get_proposal": (True, False),
    "approve_proposal": (False, False),
    "reject_proposal": (False, False),
    "list_rules": (True, False),
    "retire_rule": (False, True),
    "next_judgments": (False, False),
    "submit_judgments": (False, False),
    "judge_with_assistant": (False, False),
    "review_queue": (True, False),
    "get_judge_calibration": (True, False),
    "get_changes": (True, False),
    "get_claim_timeline": (True, False),
    "export_evidence": (True, False),
    "refresh_task": (False, False),
    "set_task_webhook": (False, False),
}


@pytest.fixture
def example(graph: Services, tmp_path: Path) -> Services:
    load_graph_file(ROOT / "config/examples/example_graph.json", graph.tasks, graph.evidence)
    (tmp_path / "note.md").write_text("# Note\n\nA local note about vitamin D and falls.", encoding="utf-8")
    graph.jobs = JobService(graph.store, graph.task_repo, [tmp_path])
    graph.__dict__.pop("operations", None)  # rebuilt with the job service above
    return graph


def call(services: Services, name: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    """(is_error, structured content or the parsed error object)."""
    server = create_mcp_server(services.operations)

    async def run() -> tuple[bool, Any]:
        async with Client(server) as client:
            result = await client.call_tool(name, arguments)
            if result.is_error:
                text = result.content[0].text  # type: ignore[union-attr]
                return True, json.loads(text[text.index("{") :])
            return False, result.structured_content

    return anyio.run(run)


def test_every_tool_is_listed_with_schemas_annotations_and_a_description(example: Services) -> None:
    async def run() -> Any:
        async with Client(create_mcp_server(example.operations)) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in anyio.run(run)}
    assert set(tools) == set(TOOLS)
    for name, (read_only, destructive) in TOOLS.items():
        tool = tools[name]
        assert tool.input_schema["type"] == "object" and tool.input_schema.get("additionalProperties") is False
        assert tool.output_schema and tool.output_schema["type"] == "object"
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is read_only, name
        assert tool.annotations.destructive_hint is destructive, name
        assert tool.description and len(tool.description) > 60


def test_create_task_returns_the_id_and_refuses_a_second_task_with_the_same_hypothesis(example: Services) -> None:
    error, out = call(example, "create_task", {"hypothesis": "Coffee improves memory", "config": {"max_pages": 5}})
    assert not error and out["task_id"].startswith("coffee_improves_memory_") and len(out["claim_ids"]) == 1
    error, again = call(example, "create_task", {"hypothesis": "Coffee improves memory"})
    assert error and again["error"] == "conflict"


def test_add_claims_returns_the_claim_the_task_holds_and_names_a_bad_claim(example: Services) -> None:
    held = "vitamin D supplementation reduces the risk of fractures in community-dwelling older adults"
    error, out = call(example, "add_claims", {"task_id": TASK, "claims": [held, "Vitamin D lowers blood pressure."]})
    assert not error and (out["created"], out["existing"]) == (1, 1)
    assert [c["created"] for c in out["claims"]] == [False, True] and out["claims"][0]["text"].startswith("Vitamin D")
    error, again = call(example, "add_claims", {"task_id": TASK, "claims": ["VITAMIN D LOWERS BLOOD PRESSURE"]})
    assert not error and again["claims"][0] == {**out["claims"][1], "created": False}
    error, out = call(example, "add_claims", {"task_id": "no_such_task", "claims": ["A claim"]})
    assert error and out["error"] == "not_found"
    for claims, field in (
        ([""], "claims[0]"),
        (["ok", "x" * 4001], "claims[1]"),
        ([], "claims"),
        (["Does vitamin D lower blood pressure?"], "claims[0]"),  # a question is never a claim
    ):
        error, out = call(example, "add_claims", {"task_id": TASK, "claims": claims})
        assert error and (out["error"], out["field"]) == ("invalid_input", field)


def test_unknown_arguments_and_bad_values_name_the_field(example: Services) -> None:
    error, out = call(example, "create_task", {"hypothesis": "x", "colour": "red"})
    assert error and out == {
        "error": "invalid_input",
        "message": "colour: Extra inputs are not permitted",
        "field": "colour",
    }
    error, out = call(example, "get_status", {"task_id": "Bad Id"})
    assert error and out["field"] == "task_id"
    error, out = call(example, "get_status", {"task_id": TASK, "wait": 301})
    assert error and out["field"] == "wait"
    error, out = call(example, "get_materials", {"task_id": "no_such_task"})
    assert error and out["error"] == "not_found"


def test_queue_targets_then_get_status_and_stop(example: Services, tmp_path: Path) -> None:
    error, out = call(
        example,
        "queue_targets",
        {"task_id": TASK, "targets": [{"kind": "file", "value": "note.md"}, {"kind": "file", "value": "note.md"}]},
    )
    assert not error and out["queued"] == 1 and out["duplicates"] == 1
    error, out = call(example, "queue_targets", {"task_id": TASK, "targets": [{"kind": "file", "value": "/etc"}]})
    assert error and out["field"] == "targets[0].value"
    error, status = call(example, "get_status", {"task_id": TASK, "detail": "full"})
    assert not error and status["jobs"]["queued"] == 1 and status["metrics"]["claims"] == 3
    assert status["milestones"]["targets_queued"] and not status["milestones"]["jobs_drained"]
    assert {b["domain_block_reason"] for b in status["blocked_domains"]} == {"denylist"}  # config/domains.yaml
    assert status["idle_seconds"] >= 0
    assert status["job_list"][0]["value"] == str((tmp_path / "note.md").resolve())
    error, stopped = call(example, "stop_task", {"task_id": TASK, "cleanup": "soft"})
    assert not error and stopped["cancelled_jobs"] == 1 and not stopped["resumable"]
    assert call(example, "get_status", {"task_id": TASK})[1]["error"] == "not_found"  # soft clean-up removes the task


def test_get_materials_matches_the_service_and_carries_evidence_and_years(example: Services) -> None:
    error, out = call(example, "get_materials", {"task_id": TASK})
    assert not error
    expected = example.materials.materials(GetMaterialsRequest(task_id=TASK)).model_dump(mode="json")
    out.pop("computed_at"), expected.pop("computed_at")
    assert out == expected
    hypothesis = out["claims"][0]
    assert hypothesis["evidence_count"] == hypothesis["supports_count"] + hypothesis["refutes_count"]
    assert {e["relation"] for e in hypothesis["evidence"]} >= {"supports", "refutes"}
    years = [e["year"] for e in hypothesis["evidence"] if e["year"] is not None]
    assert hypothesis["evidence_years"] == {"oldest": min(years), "newest": max(years)}
    low, high = hypothesis["credible_interval_95"]
    assert low < hypothesis["confidence"] < high


def test_get_evidence_graph_has_domain_categories_and_a_browser_link(example: Services) -> None:
    error, out = call(example, "get_evidence_graph", {"task_id": TASK})
    assert not error
    labels = {n["label"] for n in out["nodes"]}
    assert labels == {"Task", "Claim", "Fragment", "Page", "Domain"}
    assert all(n.get("domain_category") for n in out["nodes"] if n["label"] == "Domain")
    types = {e["type"] for e in out["edges"]}
    assert {"HAS_CLAIM", "SUPPORTS", "REFUTES", "EXTRACTED_FROM", "IN_DOMAIN"} <= types
    ids = {n["id"] for n in out["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in out["edges"])
    assert TASK in out["cypher"] and not out["truncated"]
    rows = example.explore.query_graph(out["cypher"]).rows  # the query given to people runs as it is
    assert rows


def test_query_graph_runs_reads_and_refuses_writes(example: Services) -> None:
    error, out = call(
        example,
        "query_graph",
        {"cypher": "MATCH (c:Claim {task_id: $t}) RETURN count(c) AS n", "params": {"t": TASK}},
    )
    assert not error and out["rows"] == [{"n": 3}]
    error, out = call(example, "query_graph", {"cypher": "MATCH (c:Claim) DETACH DELETE c"})
    assert error and out["field"] == "cypher" and "read-only" in out["message"]
    assert example.explore.query_graph("MATCH (c:Claim) RETURN count(c) AS n").rows == [{"n": 3}]


def test_views_are_listed_and_run(example: Services) -> None:
    error, views = call(example, "list_views", {})
    assert not error and "contradictions" in {v["name"] for v in views["views"]}
    error, out = call(example, "query_view", {"name": "contradictions", "params": {"task_id": TASK}})
    assert not error and out["row_count"] == 1
    error, out = call(example, "query_view", {"name": "nope", "params": {}})
    assert error and out["error"] == "not_found"


def test_feedback_check_domain_and_calibration_tools(example: Services) -> None:
    error, out = call(
        example,
        "feedback",
        {"task_id": TASK, "action": "domain_block", "args": {"domain_pattern": "*.example.com", "reason": "ads"}},
    )
    assert not error and out["changed"]["decision"] == "block" and out["event_id"]
    error, decision = call(example, "check_domain", {"domain": "wellness-blog.example.com"})
    assert not error and not decision["allowed"] and decision["domain_block_reason"] == "manual"
    assert decision["matched_pattern"] == "*.example.com" and decision["domain_unblock_risk"] == "low"
    error, out = call(
        example, "feedback", {"task_id": TASK, "action": "domain_block", "args": {"domain_pattern": "*.com"}}
    )
    assert error and out["field"].startswith("args.")
    error, out = call(example, "feedback", {"task_id": TASK, "action": "launch", "args": {}})
    assert error and out["field"] == "action"
    error, stats = call(example, "calibration_metrics", {"action": "get_stats"})
    assert not error and stats["result"]["samples"] == 0
    error, out = call(example, "calibration_metrics", {"action": "evaluate"})
    assert error and out["error"] == "invalid_input"
    error, out = call(example, "calibration_rollback", {"version": 3})
    assert error and out["error"] == "not_found"
    error, status = call(example, "get_status", {"task_id": TASK})
    assert [o["domain_pattern"] for o in status["domain_overrides"]] == ["*.example.com"]
    (manual,) = [b for b in status["blocked_domains"] if b["domain_block_reason"] == "manual"]
    assert manual["domain"] == "*.example.com" and manual["reason"] == "ads"


# ----------------------------------------------------------------------------- strict arguments
@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("get_evidence_graph", {"task_id": TASK, "limit": True}, "limit"),  # used to be taken as 1
        ("get_evidence_graph", {"task_id": TASK, "limit": 5.0}, "limit"),
        ("get_evidence_graph", {"task_id": TASK, "limit": "5"}, "limit"),
        ("get_materials", {"task_id": TASK, "options": {"include_neutral": 1}}, "options.include_neutral"),
        ("create_task", {"hypothesis": "Strict types", "config": {"max_pages": "5"}}, "config.max_pages"),
        ("create_task", {"hypothesis": "Strict types", "config": "{}"}, "config"),
        ("collect_garbage", {"dry_run": "false"}, "dry_run"),
        ("list_views", {"colour": "red"}, "colour"),  # its schema forbids any argument
        ("create_task", {"hypothesis": "\u0000"}, "hypothesis"),
        ("create_task", {"hypothesis": "ok", "config": {"claims": ["bell\u0007"]}}, "config.claims[0]"),
        ("queue_targets", {"task_id": TASK, "targets": [{"kind": "query", "value": "a\nb"}]}, "targets[0].value"),
        ("query_graph", {"cypher": "RETURN $x AS x", "params": {"x": "\ud800"}}, "params.x"),
        ("query_view", {"name": "contradictions", "params": {"task_id": {"nested": ["\udfff"]}}}, "params"),
        ("check_domain", {"domain": "*"}, "domain"),
        ("check_domain", {"domain": "https://example.org/path"}, "domain"),
    ],
)
def test_arguments_of_the_wrong_type_or_with_control_characters_are_refused_by_name(
    example: Services, tool: str, arguments: dict[str, Any], field: str
) -> None:
    error, out = call(example, tool, arguments)
    assert error and out["error"] == "invalid_input" and out["field"] == field, out
    assert call(example, "get_status", {"task_id": TASK})[1]["metrics"]["claims"] == 3  # nothing was written


def test_a_float_field_takes_an_integer_and_multi_line_text_keeps_its_line_breaks(example: Services) -> None:
    error, out = call(example, "get_status", {"task_id": TASK, "wait": 0})
    assert not error and out["task_id"] == TASK
    error, out = call(example, "query_graph", {"cypher": "MATCH (c:Claim)\n\tRETURN count(c) AS n"})
    assert not error and out["rows"] == [{"n": 3}]


def test_published_input_schemas_are_self_contained_and_every_property_has_a_type(example: Services) -> None:
    async def run() -> Any:
        async with Client(create_mcp_server(example.operations)) as client:
            return (await client.list_tools()).tools

    def untyped(schema: dict[str, Any], path: str) -> list[str]:
        found: list[str] = []
        for name, prop in schema.get("properties", {}).items():
            variants = prop.get("anyOf", [prop])
            if not all("type" in v or "enum" in v or "const" in v for v in variants):
                found.append(f"{path}.{name}")
            for variant in variants:
                found += untyped(variant, f"{path}.{name}")
                found += untyped(variant.get("items", {}), f"{path}.{name}[]")
        return found

    tools = {t.name: t.input_schema for t in anyio.run(run)}
    assert not [name for name, schema in tools.items() if "$ref" in json.dumps(schema) or "$defs" in schema]
    assert [path for name, schema in tools.items() for path in untyped(schema, name)] == []
    for tool, prop in (("create_task", "config"), ("get_materials", "options"), ("query_graph", "options")):
        assert tools[tool]["properties"][prop]["type"] == "object", tool
    assert tools["list_views"]["properties"] == {} and tools["list_views"]["additionalProperties"] is False
