"""The `lyra` CLI against the live Neo4j (as a user would run it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lyra.bootstrap import Services
from lyra.core.settings import Settings
from tests.support.helpers import ROOT, neo4j_env, run_lyra

pytestmark = pytest.mark.neo4j


def lyra(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    return run_lyra(*args, env=neo4j_env(settings))


def test_graph_load_then_materials_json(graph: Services, settings: Settings) -> None:
    loaded = lyra(settings, "graph", "load", "config/examples/example_graph.json")
    assert loaded.returncode == 0, loaded.stderr
    result = lyra(settings, "materials", "example_vitamin_d", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    claims = {c["text"]: c for c in data["claims"]}
    assert len(claims) == 3
    hypothesis = claims["Vitamin D supplementation reduces the risk of fractures in community-dwelling older adults."]
    # 2 SUPPORTS (0.71, 0.58), 3 REFUTES (0.91, 0.62, 0.88), 2 NEUTRAL in the example graph
    assert hypothesis["alpha"] == pytest.approx(1 + 0.71 + 0.58)
    assert hypothesis["beta"] == pytest.approx(1 + 0.91 + 0.62 + 0.88)
    assert hypothesis["evidence_count"] == 5
    for key in ("confidence", "uncertainty", "controversy", "alpha", "beta", "evidence_count"):
        assert key in hypothesis


def test_materials_reads_a_graph_written_by_plain_cypher(graph: Services, settings: Settings) -> None:
    # "however it was written": a graph made with Cypher in Neo4j Browser, not through Lyra.
    graph.store.driver.execute_query(
        """
        CREATE (t:Task {id: 'hand_made', hypothesis: 'h', status: 'created', created_at: datetime()})
        CREATE (c:Claim:Task_hand_made {id: 'clm_hand', task_id: 'hand_made', text: 'hand claim',
                claim_adoption_status: 'adopted', created_at: datetime()})
        CREATE (t)-[:HAS_CLAIM]->(c)
        CREATE (p:Page {id: 'pg_hand', url: 'https://hand.example/x'})
        CREATE (f1:Fragment {id: 'frg_h1', text: 'a', text_hash: 'h1'})-[:EXTRACTED_FROM]->(p)
        CREATE (f2:Fragment {id: 'frg_h2', text: 'b', text_hash: 'h2'})-[:EXTRACTED_FROM]->(p)
        CREATE (f1)-[:SUPPORTS {id: 'e1', nli_confidence: 0.9}]->(c)
        CREATE (f2)-[:REFUTES {id: 'e2', nli_confidence: 0.9}]->(c)
        """,
        database_=graph.store.database,
    )
    result = lyra(settings, "materials", "hand_made", "--json")
    assert result.returncode == 0, result.stderr
    (claim,) = json.loads(result.stdout)["claims"]
    assert (claim["alpha"], claim["beta"], claim["confidence"], claim["controversy"]) == pytest.approx(
        (1.9, 1.9, 0.5, 0.5)
    )
    # the claim carries no stored sums: the check names it as aggregated on read, rescore stores them
    check = lyra(settings, "graph", "rescore", "--check")
    assert check.returncode == 0, check.stderr
    assert (json.loads(check.stdout)["unstored"], json.loads(check.stdout)["differing"]) == (1, 0)
    assert lyra(settings, "graph", "rescore").returncode == 0
    stored = graph.store.driver.execute_query(
        "MATCH (c:Claim {id: 'clm_hand'}) RETURN c.evidence_support_weight AS s, c.evidence_refutes AS r",
        database_=graph.store.database,
    ).records[0]
    assert (stored["s"], stored["r"]) == (pytest.approx(0.9), 1)
    again = json.loads(lyra(settings, "materials", "hand_made", "--json").stdout)["claims"][0]
    assert (again["alpha"], again["beta"]) == pytest.approx((1.9, 1.9))


def test_a_hand_edited_edge_of_a_lyra_claim_is_found_by_the_check_and_fixed_by_rescore(
    graph: Services, settings: Settings
) -> None:
    loaded = lyra(settings, "graph", "load", "config/examples/example_graph.json")
    assert loaded.returncode == 0, loaded.stderr
    clean = lyra(settings, "graph", "rescore", "--check")
    assert clean.returncode == 0, clean.stderr
    assert json.loads(clean.stdout)["differing"] == 0 and json.loads(clean.stdout)["unstored"] == 0
    # plain Cypher halves one SUPPORTS edge's confidence: the claim's stored sums no longer match its edges
    rows = graph.store.driver.execute_query(
        """
        MATCH (c:Claim)<-[r:SUPPORTS]-() WHERE c.text STARTS WITH 'Vitamin D supplementation reduces'
        WITH c, r ORDER BY r.nli_confidence DESC LIMIT 1
        SET r.nli_confidence = r.nli_confidence / 2
        RETURN c.id AS claim_id, c.task_id AS task_id
        """,
        database_=graph.store.database,
    ).records
    claim_id, task_id = rows[0]["claim_id"], rows[0]["task_id"]
    check = lyra(settings, "graph", "rescore", "--check", "--task", task_id)
    assert check.returncode == 1, check.stderr
    report = json.loads(check.stdout)
    assert report["differing"] == 1 and report["differences"][0]["claim_id"] == claim_id
    difference = report["differences"][0]
    assert difference["stored"]["support_weight"] == pytest.approx(0.71 + 0.58)
    assert difference["recomputed"]["support_weight"] == pytest.approx(0.71 / 2 + 0.58)
    fixed = lyra(settings, "graph", "rescore", "--task", task_id)
    assert fixed.returncode == 0, fixed.stderr
    assert json.loads(fixed.stdout)["differing"] == 1
    assert lyra(settings, "graph", "rescore", "--check").returncode == 0
    materials = lyra(settings, "materials", task_id, "--json")
    (claim,) = [c for c in json.loads(materials.stdout)["claims"] if c["claim_id"] == claim_id]
    assert claim["alpha"] == pytest.approx(1 + 0.71 / 2 + 0.58)
    missing = lyra(settings, "graph", "rescore", "--task", "missing_task")
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_materials_table_and_errors(graph: Services, settings: Settings) -> None:
    graph.tasks.create_task("table_task", "a claim shown in a table")
    table = lyra(settings, "materials", "table_task")
    assert table.returncode == 0 and "a claim shown in a table" in table.stdout and "0.500" in table.stdout
    missing = lyra(settings, "materials", "missing_task")
    assert missing.returncode == 2 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    invalid = lyra(settings, "materials", "Not-Valid")
    assert invalid.returncode == 2 and "task_id" in invalid.stderr


def test_task_cleanup_command(graph: Services, settings: Settings) -> None:
    graph.tasks.create_task("to_clean", "h")
    result = lyra(settings, "task", "cleanup", "to_clean", "--mode", "hard")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["removed"]["claims"] == 1
    bad = lyra(settings, "task", "cleanup", "to_clean", "--mode", "medium")
    assert bad.returncode != 0 and "--mode" in bad.stderr


def test_graph_load_with_bad_edge_writes_nothing(graph: Services, settings: Settings, tmp_path: Path) -> None:
    data = json.loads((ROOT / "config/examples/example_graph.json").read_text())
    data["edges"][3]["nli_confidence"] = 1.7
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    result = lyra(settings, "graph", "load", str(path))
    assert result.returncode == 2
    assert "edges[3].nli_confidence" in result.stderr
    assert graph.cleanup.counts().tasks == 0 and graph.cleanup.counts().pages == 0


def test_feedback_check_domain_and_calibration_commands(graph: Services, settings: Settings) -> None:
    assert lyra(settings, "graph", "load", "config/examples/example_graph.json").returncode == 0
    refused = lyra(
        settings, "feedback", "example_vitamin_d", "domain_block", "--arg", "domain_pattern=*.com", "--arg", "reason=x"
    )
    assert refused.returncode == 2 and "args.domain_pattern" in refused.stderr and "public suffix" in refused.stderr
    done = lyra(
        settings,
        "feedback",
        "example_vitamin_d",
        "domain_block",
        "--arg",
        "domain_pattern=*.example.com",
        "--arg",
        "reason=adverts",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["changed"]["decision"] == "block"
    checked = json.loads(lyra(settings, "check-domain", "wellness-blog.example.com").stdout)
    assert checked["allowed"] is False and checked["domain_block_reason"] == "manual"
    denied = json.loads(lyra(settings, "check-domain", "malware.example").stdout)
    assert denied["domain_block_reason"] == "denylist"
    stats = lyra(settings, "calibration", "get_stats")
    assert stats.returncode == 0 and json.loads(stats.stdout)["result"]["samples"] == 0


def test_report_writes_a_static_page_and_serve_refuses_a_public_address_without_a_token(
    graph: Services, settings: Settings, tmp_path: Path
) -> None:
    assert lyra(settings, "graph", "load", "config/examples/example_graph.json").returncode == 0
    out = tmp_path / "report.html"
    written = lyra(settings, "report", "example_vitamin_d", "--out", str(out))
    assert written.returncode == 0, written.stderr
    html = out.read_text(encoding="utf-8")
    assert "Vitamin D supplementation reduces" in html and 'class="confidence-bar' in html
    assert "<time>2001-02-03" not in html  # default: since the task's latest run
    since = tmp_path / "since.html"
    dated = lyra(settings, "report", "example_vitamin_d", "--out", str(since), "--since", "2001-02-03T04:05:06Z")
    assert dated.returncode == 0, dated.stderr
    assert '<p id="changes-since">Since <time>2001-02-03T04:05:06' in since.read_text(encoding="utf-8")
    bad = lyra(settings, "report", "example_vitamin_d", "--out", str(since), "--since", "last tuesday")
    assert bad.returncode != 0 and "since" in bad.stderr
    unknown_run = lyra(settings, "report", "example_vitamin_d", "--out", str(since), "--since", "run_0123456789ab")
    assert unknown_run.returncode != 0 and "run_0123456789ab" in unknown_run.stderr
    refused = run_lyra("serve", "--host", "0.0.0.0", env={**neo4j_env(settings), "LYRA_API_TOKEN": ""})
    assert refused.returncode == 2 and "LYRA_API_TOKEN" in refused.stderr


def test_cli_mcp_and_rest_print_the_same_materials_for_the_same_task(graph: Services, settings: Settings) -> None:
    import anyio
    import httpx
    from mcp import Client

    from lyra.bootstrap import build_http_app
    from lyra.mcp.server import create_mcp_server

    assert lyra(settings, "graph", "load", "config/examples/example_graph.json").returncode == 0
    cli = lyra(settings, "materials", "example_vitamin_d", "--json")
    assert cli.returncode == 0, cli.stderr
    app = build_http_app(graph, workers=False, mcp=False)

    async def other_doors() -> tuple[dict[str, Any], dict[str, Any]]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            rest = (await client.get("/api/v1/tasks/example_vitamin_d/materials")).json()
        async with Client(create_mcp_server(graph.operations)) as client:
            result = await client.call_tool("get_materials", {"task_id": "example_vitamin_d"})
        assert result.structured_content is not None
        return rest, result.structured_content

    rest, mcp = anyio.run(other_doors)
    by_door = [json.loads(cli.stdout), rest, mcp]
    for door in by_door:
        door.pop("computed_at")
    assert by_door[0]["claims"] and by_door[0] == by_door[1] == by_door[2]


@pytest.mark.parametrize(
    ("command", "variable", "value", "message"),
    [
        (("serve",), "LYRA_QUERY_TIMEOUT", "abc", "setting query_timeout: Input should be a valid number"),
        (("mcp",), "LYRA_API_TOKEN", "short", "setting api_token: LYRA_API_TOKEN must be at least 16 characters"),
        (("neo4j", "status"), "LYRA_QUERY_TIMEOUT", "abc", "setting query_timeout:"),
        (("neo4j", "start"), "LYRA_API_PORT", "99999", "setting api_port: Input should be less than or equal to"),
        (("bench", "confidence"), "LYRA_API_TOKEN", "short", "setting api_token:"),
        (("eval", "nli"), "LYRA_QUERY_TIMEOUT", "abc", "setting query_timeout:"),
        (("task", "list"), "NEO4J_URI", "http://example.org", "setting NEO4J_URI: NEO4J_URI must start with"),
        (("ingest", "--task", "t_task", "x.md"), "LYRA_INGEST_MAX_FILES", "0", "setting ingest_max_files:"),
    ],
)
def test_a_bad_setting_prints_one_error_line_and_exits_2_on_every_command_path(
    command: tuple[str, ...], variable: str, value: str, message: str
) -> None:
    result = run_lyra(*command, env={variable: value}, timeout=120)
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr
    assert lines[0].startswith(f"error (config_error): {message}"), lines
    assert lines[1:] == [f"hint: check {variable} in the environment"]
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_auth_queue_and_resolve_auth_commands_keep_the_cookie_off_the_output(
    graph: Services, settings: Settings, tmp_path: Path
) -> None:
    from lyra.models.api import QueueTargetsRequest, Target

    graph.tasks.create_task("cli_walls", "Time-restricted eating improves insulin sensitivity")
    graph.jobs.queue(
        QueueTargetsRequest(task_id="cli_walls", targets=[Target(kind="url", value="https://journal.example/a")])
    )
    iv = "iv_" + "7" * 32
    graph.store.driver.execute_query(
        "MATCH (t:Task {id: 'cli_walls'})-[:HAS_JOB]->(j:Job) "
        "SET j.state = 'waiting', j.paused_domain = 'journal.example', j.waiting_on = $iv "
        "CREATE (t)-[:HAS_INTERVENTION]->(:Intervention {id: $iv, task_id: 'cli_walls', job_id: j.id, "
        "url: 'https://journal.example/a', domain: 'journal.example', kind: 'captcha', reason: 'a widget', "
        "status: 'pending', attempts: 1, created_at: datetime(), updated_at: datetime()})-[:FOR_JOB]->(j)",
        iv=iv,
        database_=graph.store.database,
    )
    env = {**neo4j_env(settings), "LYRA_STATE_DIR": str(tmp_path / "state")}
    listed = run_lyra("task", "auth-queue", "cli_walls", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    queue = json.loads(listed.stdout)
    assert queue["pending"] == 1 and queue["paused_domains"] == ["journal.example"] and queue["items"][0]["id"] == iv
    table = run_lyra("task", "auth-queue", "cli_walls", env=env)
    assert table.returncode == 0 and iv in table.stdout and "journal.example" in table.stdout

    missing = run_lyra(
        "task", "resolve-auth", "cli_walls", iv, "--action", "cookie", "--cookie-file", str(tmp_path / "no"), env=env
    )
    assert missing.returncode == 2 and "--cookie-file" in missing.stderr
    resolved = subprocess.run(
        [sys.executable, "-m", "lyra", "task", "resolve-auth", "cli_walls", iv, "--action", "cookie"],
        input="cf_clearance=secret-value-42\n",
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert resolved.returncode == 0, resolved.stderr
    out = json.loads(resolved.stdout)
    assert out["status"] == "resolved" and out["cookie_stored"] and out["job_state"] == "queued"
    assert "secret-value-42" not in resolved.stdout + resolved.stderr
    assert "secret-value-42" in (tmp_path / "state" / "auth" / "cookies.json").read_text(encoding="utf-8")
    again = run_lyra("task", "resolve-auth", "cli_walls", iv, "--action", "retry", env=env)
    assert again.returncode == 2 and "(conflict)" in again.stderr and "already resolved" in again.stderr


def test_learn_commands_show_the_feedback_record_with_its_reviewer_and_refuse_bad_reviews(
    graph: Services, settings: Settings
) -> None:
    assert lyra(settings, "graph", "load", "config/examples/example_graph.json").returncode == 0
    done = lyra(
        settings,
        "feedback",
        "example_vitamin_d",
        "domain_block",
        "--arg",
        "domain_pattern=ads.example.net",
        "--arg",
        "reason=adverts",
        "--reviewer",
        "ana",
        "--tag",
        "spam",
    )
    assert done.returncode == 0, done.stderr
    record_id = json.loads(done.stdout)["record_id"]
    shown = lyra(settings, "learn", "feedback", record_id)
    assert shown.returncode == 0, shown.stderr
    record = json.loads(shown.stdout)
    assert (record["reviewer_id"], record["tags"], record["component"]) == ("ana", ["spam"], "domain_policy")
    missing = lyra(settings, "learn", "reject", "prp_missing", "--reason", "no")
    assert missing.returncode == 2 and "not_found" in missing.stderr
    no_reason = lyra(settings, "learn", "reject", "prp_missing", "--reason", " ")
    assert no_reason.returncode == 2 and "reason" in no_reason.stderr
    rules = lyra(settings, "learn", "rules")
    assert rules.returncode == 0 and json.loads(rules.stdout) == {"rules": [], "rule_sets": []}


def test_ingest_into_a_task_holds_each_claim_once_completes_the_task_and_prints_a_skipped_file_once(
    graph: Services, settings: Settings, tmp_path: Path
) -> None:
    (tmp_path / "notes.docx").write_bytes(b"not read")  # skipped: the summary lists it
    first = lyra(settings, "ingest", str(tmp_path), "--task", "cli_once", "--claim", "Vitamin D reduces falls.")
    assert first.returncode == 0, first.stderr
    again = lyra(
        settings,
        "ingest",
        str(tmp_path),
        "--task",
        "cli_once",
        "--claim",
        "vitamin d reduces  falls",
        "--claim",
        "Tea calms",
    )
    assert again.returncode == 0, again.stderr
    assert "already in the task" in again.stdout and "1 added, 1 already in the task cli_once" in again.stdout
    assert (again.stdout + again.stderr).count("unsupported file type .docx") == 1
    (task,) = graph.operations.list_tasks().tasks
    assert (task.claims, task.status) == (2, "completed")  # ingested without jobs, it still ran


def test_task_add_claims_reports_new_and_held_claims_and_names_the_bad_input(
    graph: Services, settings: Settings
) -> None:
    graph.tasks.create_task("cli_claims", "Vitamin D reduces falls.")
    added = lyra(settings, "task", "add-claims", "cli_claims", "VITAMIN D REDUCES FALLS", "Tea calms", "--json")
    assert added.returncode == 0, added.stderr
    body = json.loads(added.stdout)
    assert [c["created"] for c in body["claims"]] == [False, True] and body["claims"][0][
        "text"
    ] == "Vitamin D reduces falls."
    table = lyra(settings, "task", "add-claim", "cli_claims", "tea calms.")
    assert table.returncode == 0 and "already in the task" in table.stdout and "0 added, 1 already" in table.stdout
    missing = lyra(settings, "task", "add-claims", "no_such_task", "A claim")
    assert missing.returncode == 2 and "error (not_found)" in missing.stderr
    empty = lyra(settings, "task", "add-claims", "cli_claims", "ok", " ")
    assert empty.returncode == 2 and "error (invalid_input): claims[1]" in empty.stderr


def test_task_webhook_command_sets_prints_the_secret_once_removes_and_refuses_a_private_address(
    graph: Services, settings: Settings
) -> None:
    graph.tasks.create_task("hooked_cli", "h")
    set_ = lyra(settings, "task", "webhook", "hooked_cli", "--url", "https://hooks.example.org/lyra")
    assert set_.returncode == 0, set_.stderr
    answer = json.loads(set_.stdout)
    assert answer["url"] == "https://hooks.example.org/lyra" and len(answer["secret"]) >= 32
    assert answer["signature_header"] == "X-Lyra-Signature"
    again = json.loads(
        lyra(settings, "task", "webhook", "hooked_cli", "--url", "https://hooks.example.org/lyra").stdout
    )
    assert again["secret"] is None
    private = lyra(settings, "task", "webhook", "hooked_cli", "--url", "http://10.1.2.3/hook")
    assert private.returncode != 0 and "url" in private.stderr
    neither = lyra(settings, "task", "webhook", "hooked_cli")
    assert neither.returncode != 0 and "--remove" in neither.stderr
    removed = lyra(settings, "task", "webhook", "hooked_cli", "--remove")
    assert removed.returncode == 0 and json.loads(removed.stdout)["url"] is None
