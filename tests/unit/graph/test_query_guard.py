"""The read-only query door's guard without Neo4j: the tokenizer, the name allow-lists over the hostile corpus,
the plan check on plan trees shaped like Neo4j 5.26's, the JSON byte counter, the parameter check, the mapping of
Neo4j's errors for a caller's query, and the server configuration derived from the same allow-lists."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from neo4j import exceptions as neo4j_errors

from lyra.core.errors import (
    GraphQueryError,
    InvalidInputError,
    LyraError,
    QueryFailed,
    QueryMemoryExceeded,
    QueryRefused,
    QuerySyntaxError,
    QueryTimeout,
)
from lyra.core.settings import load_settings
from lyra.graph import query_guard as guard
from lyra.graph.server import LocalNeo4j
from lyra.graph.store import translate_adhoc_errors, translate_errors
from lyra.services.explore import check_params
from tests.support.hostile_cypher import load_corpus

ROOT = Path(__file__).resolve().parents[3]
CORPUS: list[dict[str, Any]] = load_corpus()


def names(cypher: str) -> guard.StatementNames:
    return guard.statement_names(guard.tokenize(cypher))


# ----------------------------------------------------------------------------------------------- tokenizer
def test_comments_and_whitespace_leave_no_tokens() -> None:
    tokens = guard.tokenize("// a line\nMATCH /* a block\nover lines */ (n)\t\u00a0RETURN n")
    assert [t.text for t in tokens] == ["MATCH", "(", "n", ")", "RETURN", "n"]


def test_string_literals_are_opaque_even_with_escaped_quotes() -> None:
    tokens = guard.tokenize(r"""RETURN 'it\'s // not a comment' AS a, "say \"CALL x.y()\"" AS b, '\\' AS c""")
    assert [t.kind for t in tokens if t.kind == "string"] == ["string"] * 3
    assert names(r"""RETURN 'it\'s', "\"", apoc.coll.sum([1])""").functions == ("apoc.coll.sum",)


def test_backtick_names_keep_their_text_and_a_doubled_backtick() -> None:
    (token,) = guard.tokenize("`odd``name.with dots`")
    assert token.kind == "quoted" and token.text == "odd`name.with dots"


@pytest.mark.parametrize(
    "cypher",
    [
        "CALL apoc.load.json('u')",
        "CALL apoc . load . json ('u')",
        "CALL apoc/* x */.load/**/.json('u')",
        "CALL apoc // end of line\n.load\n.json('u')",
        "CALL `apoc`.`load`.`json`('u')",
        "CALL `apoc.load.json`('u')",
        "CALL apoc.load.json YIELD value RETURN value",
        "OPTIONAL CALL apoc.load.json('u') YIELD value RETURN value",
    ],
)
def test_a_procedure_name_is_read_across_spaces_comments_and_backticks(cypher: str) -> None:
    assert names(cypher).procedures == ("apoc.load.json",)


@pytest.mark.parametrize(
    ("cypher", "function"),
    [
        ("RETURN apoc.text.join(['a'], '')", "apoc.text.join"),
        ("RETURN apoc . text . join (['a'], '')", "apoc.text.join"),
        ("RETURN `apoc`.text.`join`(['a'], '')", "apoc.text.join"),
        ("RETURN COLLECT { RETURN apoc.coll.sum([1]) }", "apoc.coll.sum"),
        ("MATCH (n) RETURN n.apoc.load.json('u')", "n.apoc.load.json"),
        ("RETURN $p.apoc.load.json('u')", "apoc.load.json"),
    ],
)
def test_a_function_name_is_read_across_spaces_comments_and_backticks(cypher: str, function: str) -> None:
    assert function in names(cypher).functions


def test_names_in_comments_and_strings_are_not_calls() -> None:
    found = names("// CALL apoc.load.json('u')\n/* apoc.cypher.run() */ RETURN 'apoc.export.json.all(' AS s")
    assert found == guard.StatementNames(procedures=(), functions=())


def test_keywords_before_a_parenthesis_are_not_functions() -> None:
    found = names(
        "MATCH (a) WHERE NOT (a)-->() AND exists { (a)--() } RETURN toUpper(a.x), CASE WHEN (1 = 1) THEN 1 END"
    )
    assert found.functions == ("toUpper",)


def test_subquery_scopes_are_not_procedures() -> None:
    assert names("MATCH (t) CALL (t) { RETURN 1 AS one } CALL { RETURN 2 AS two } RETURN *").procedures == ()


@pytest.mark.parametrize(
    ("character", "where"),
    [
        ("\u2028", "comment"),
        ("\u2029", "comment"),
        ("\u0085", "comment"),
        ("\u000b", "code"),
        ("\u000c", "code"),
        ("\u200b", "code"),
        ("\u200d", "code"),
        ("\u202e", "code"),
        ("\ufeff", "code"),
        ("\u0000", "code"),
        ("\ue000", "code"),
        ("\uff0e", "code"),
        ("\u200b", "quoted name"),
    ],
)
def test_characters_that_could_hide_text_are_refused_outside_string_literals(character: str, where: str) -> None:
    cypher = {
        "comment": f"RETURN 1 AS x // hidden{character}RETURN 2",
        "code": f"RETURN 1 AS x{character}",
        "quoted name": f"RETURN 1 AS `x{character}`",
    }[where]
    with pytest.raises(QueryRefused) as info:
        guard.check_statement(cypher)
    assert f"U+{ord(character):04X}" in info.value.message


@pytest.mark.parametrize(
    "cypher",
    [
        r"RETURN 'a\u0027 AS x",
        r"RETURN 1 // \u000a , apoc.cypher.runFirstColumnSingle('RETURN 1', {})",
        r"RETURN 1 AS `a\u0060`",
        r"RETURN 1 AS x\uuu002C 2 AS y",
        r"RETURN '\U00000027' AS x",
        r"RETURN '\u00e9' AS e",
    ],
)
def test_unicode_escapes_are_refused_anywhere_because_neo4j_applies_them_first(cypher: str) -> None:
    with pytest.raises(QueryRefused, match="unicode escape"):
        guard.tokenize(cypher)


def test_the_same_characters_inside_a_string_literal_are_data() -> None:
    guard.check_statement("RETURN 'a\u2028b\u200bc\u202ed\u000b' AS text")


def test_a_line_comment_ends_at_a_line_feed_or_crlf_but_a_lone_carriage_return_is_refused() -> None:
    assert names("RETURN 1 // c\r\n, apoc.coll.sum([1])").functions == ("apoc.coll.sum",)
    with pytest.raises(QueryRefused, match="carriage return"):
        guard.check_statement("RETURN 1 // c\r, apoc.coll.sum([1])")


@pytest.mark.parametrize("cypher", ["RETURN 'open", "RETURN `open", "RETURN 1 /* open"])
def test_unterminated_strings_names_and_comments_are_syntax_errors(cypher: str) -> None:
    with pytest.raises(QuerySyntaxError):
        guard.tokenize(cypher)


# ------------------------------------------------------------------------------------- the corpus, statement layer
@pytest.mark.parametrize("entry", CORPUS, ids=[e["id"] for e in CORPUS])
def test_the_statement_check_refuses_exactly_the_corpus_entries_it_should(entry: dict[str, Any]) -> None:
    cypher = entry["cypher"].replace("{http}", "http://127.0.0.1:9")
    if entry["outcome"] == "refused" and entry.get("layer") == "statement":
        with pytest.raises(QueryRefused) as info:
            guard.check_statement(cypher)
        assert info.value.field == "cypher"
        assert entry.get("says", "") in info.value.message
    elif entry["id"] in ("unterminated-comment", "unterminated-string"):
        with pytest.raises(QuerySyntaxError):
            guard.check_statement(cypher)
    else:  # allowed, or left to the plan, Neo4j or the byte budget
        guard.check_statement(cypher)


# ----------------------------------------------------------------------------------------------- allow-lists
@pytest.mark.parametrize(
    ("function", "allowed"),
    [
        ("count", True),
        ("toUpper", True),
        ("TOUPPER", True),
        ("date.truncate", True),
        ("vector.similarity.cosine", True),
        ("apoc.coll.sum", True),
        ("apoc.text.repeat", True),
        ("apoc.agg.median", False),  # keeps every row outside the memory tracker
        ("apoc.agg.first", True),
        ("apoc.coll.combinations", False),
        ("apoc.coll.fill", False),
        ("apoc.text.levenshteinDistance", False),
        ("apoc.text.regreplace", False),
        ("apoc.coll.newFunctionOfALaterApoc", False),  # not on the explicit list
        ("reduce", False),
        ("apoc.cypher.runFirstColumnSingle", False),
        ("apoc.xml.parse", False),
        ("apoc.util.md5", False),
        ("apoc.convert.toJson", False),
        ("apoc.text", False),
        ("apoc.text.x.y", False),
        ("graph.byName", False),
        ("file", False),
        ("my.custom.fn", False),
        ("\uff41poc.coll.sum", True),  # fullwidth: compared NFKC-normalised (Neo4j itself would not find it)
    ],
)
def test_functions_allowed_are_built_ins_and_the_pure_apoc_namespaces(function: str, allowed: bool) -> None:
    assert guard.function_allowed(function) is allowed


@pytest.mark.parametrize(
    ("procedure", "allowed"),
    [
        ("db.labels", True),
        ("db.relationshipTypes", True),
        ("DB.LABELS", True),
        ("db.propertyKeys", True),
        ("db.schema.visualization", True),
        ("db.createLabel", False),
        ("db.awaitIndexes", False),
        ("dbms.listConfig", False),
        ("dbms.components", False),
        ("apoc.coll.zipToRows", False),
        ("apoc.lock.nodes", False),
        ("apoc.load.json", False),
        ("tx.setMetaData", False),
    ],
)
def test_procedures_allowed_are_the_short_explicit_list(procedure: str, allowed: bool) -> None:
    assert guard.procedure_allowed(procedure) is allowed


# ----------------------------------------------------------------------------------------------- plan check
def op(operator: str, *children: dict[str, Any], details: str = "") -> dict[str, Any]:
    return {"operatorType": f"{operator}@neo4j", "args": {"Details": details}, "children": list(children)}


READ_PLAN = op(
    "ProduceResults",
    op(
        "Top",
        op(
            "EagerAggregation",
            op("Filter", op("NodeByLabelScan", details="n:Page"), details="cache[n.year] > $autoint_0"),
            details="apoc.coll.sum(x) AS s, date.truncate($autostring_0, datetime()) AS d",
        ),
    ),
)


def test_a_read_plan_passes() -> None:
    guard.check_plan(READ_PLAN)


def test_read_operators_with_bracketed_variants_pass() -> None:
    guard.check_plan(op("ProduceResults", op("VarLengthExpand(Pruning,BFS,All)", op("AllNodesScan"))))
    guard.check_plan(op("ProduceResults", op("StatefulShortestPath(All)", op("AllNodesScan"))))


@pytest.mark.parametrize(
    ("operator", "says"),
    [
        ("LoadCSV", "LOAD CSV reads files and URLs"),
        ("Create", "it writes"),
        ("SetProperty", "it writes"),
        ("DetachDelete", "it writes"),
        ("Merge", "it writes"),
        ("Foreach", "it writes"),
        ("SubqueryForeach", "it writes"),
        ("TransactionApply", "IN TRANSACTIONS"),
        ("TransactionForeach", "IN TRANSACTIONS"),
        ("ShowTransactions", "other sessions"),
        ("TerminateTransactions", "ends other sessions"),
        ("ShowSettings", "configuration"),
        ("AdministrationCommand", "administers"),
        ("SomethingNeo4jInventsLater", "not among the read operators"),
        ("NodeUniqueIndexSeek(Locking)", "not among the read operators"),
    ],
)
def test_an_operator_not_on_the_list_is_refused_however_deep(operator: str, says: str) -> None:
    deep = op("ProduceResults", op("Apply", op("Argument"), op("Projection", op("Optional", op(operator)))))
    with pytest.raises(QueryRefused) as info:
        guard.check_plan(deep)
    assert operator in info.value.message and says in info.value.message


def test_every_refused_operator_of_a_plan_is_named() -> None:
    plan = op("ProduceResults", op("SubqueryForeach", op("AllNodesScan"), op("Create")))
    with pytest.raises(QueryRefused, match="SubqueryForeach, Create"):
        guard.check_plan(plan)


def test_a_procedure_call_is_judged_by_its_name() -> None:
    guard.check_plan(op("ProduceResults", op("ProcedureCall", details="db.labels() :: (label :: STRING)")))
    for details in ("apoc.load.json($autostring_0) :: (value :: MAP)", "`apoc`.`export`.json.all(NULL, $m)"):
        call = op("ProcedureCall", details=details)
        with pytest.raises(QueryRefused, match="procedure apoc"):
            guard.check_plan(op("ProduceResults", op("RollUpApply", op("EmptyRow"), call)))


def test_a_namespaced_call_in_an_operators_details_must_be_allowed() -> None:
    plan = op("ProduceResults", op("Projection", details="apoc.cypher.runFirstColumnSingle($autostring_0, {}) AS x"))
    with pytest.raises(QueryRefused, match=r"apoc\.cypher\.runFirstColumnSingle"):
        guard.check_plan(plan)


def test_no_plan_is_refused() -> None:
    with pytest.raises(QueryRefused, match="no plan"):
        guard.check_plan(None)


# ----------------------------------------------------------------------------------------------- JSON size
@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -12345678901234,
        1.5,
        "",
        "plain",
        'quote " backslash \\ newline \n tab \t',
        "ünïcödé — 漢字 🙂",
        [],
        [1, "two", None, [3.25, {"k": "v"}]],
        {"a": 1, "b": [True, {"c": "d"}], "é": "x"},
    ],
)
def test_json_size_is_the_length_of_the_compact_utf8_json(value: Any) -> None:
    expected = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    assert guard.json_size(value, 10**9) == expected


def test_json_size_stops_early_on_a_huge_string_or_list() -> None:
    assert guard.json_size("a" * 20_000_000, 4_000_000) > 4_000_000
    assert guard.json_size([1] * 3_000_000, 4_000_000) > 4_000_000
    assert guard.json_size({"k": ["x" * 100] * 100}, 1_000) > 1_000


# ----------------------------------------------------------------------------------------------- parameters
NESTED_40: Any = "x"
for _ in range(40):
    NESTED_40 = [NESTED_40]


@pytest.mark.parametrize(
    ("params", "field", "says"),
    [
        ({"bad name": 1}, "params.bad name", "parameter name"),
        ({"s": "\ud800"}, "params.s", "surrogate"),
        ({"l": [1, [2, {"deep": "ok \udc00"}]]}, "params.l[1][1].deep", "surrogate"),
        ({"m": {"\udfff": 1}}, "params.m (a key)", "surrogate"),
        ({"n": 2**63}, "params.n", "64-bit"),
        ({"n": [-(2**63) - 1]}, "params.n[0]", "64-bit"),
        ({"o": object()}, "params.o", "not a JSON value"),
        ({"d": NESTED_40}, "params.d", "deeper"),
    ],
)
def test_params_are_checked_at_any_depth_and_name_the_path(params: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        check_params(params)
    assert info.value.field.startswith(field) and says in info.value.reason


def test_valid_params_pass_unchanged() -> None:
    params = {"task_id": "t1", "years": [1992, 2018], "filter": {"min": 0.5, "flag": None, "on": True}}
    assert check_params(params) == params


# ----------------------------------------------------------------------------------------------- Neo4j's errors
def neo4j_error(code: str, message: str = "the server says no") -> neo4j_errors.Neo4jError:
    return neo4j_errors.Neo4jError._hydrate_neo4j(code=code, message=message)


@pytest.mark.parametrize(
    ("code", "error", "says"),
    [
        ("Neo.ClientError.Statement.SyntaxError", QuerySyntaxError, "cannot plan"),
        ("Neo.ClientError.Statement.SemanticError", QuerySyntaxError, "cannot plan"),
        ("Neo.ClientError.Statement.ParameterMissing", QuerySyntaxError, "cannot plan"),
        ("Neo.ClientError.Procedure.ProcedureNotFound", QuerySyntaxError, "cannot plan"),
        ("Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration", QueryTimeout, "ran past its 2s limit"),
        ("Neo.ClientError.Transaction.TransactionTimedOut", QueryTimeout, "ran past"),
        ("Neo.ClientError.Transaction.Terminated", QueryTimeout, "terminated"),
        ("Neo.TransientError.Transaction.Terminated", QueryTimeout, "terminated"),
        ("Neo.ClientError.Security.Forbidden", QueryRefused, "Neo4j refused it"),
        ("Neo.ClientError.Statement.AccessMode", QueryRefused, "Neo4j refused it"),
        ("Neo.TransientError.General.MemoryPoolOutOfMemoryError", QueryMemoryExceeded, "memory"),
        ("Neo.ClientError.Statement.ArithmeticError", QueryFailed, "could not run it"),
        ("Neo.ClientError.Procedure.ProcedureCallFailed", QueryFailed, "could not run it"),
    ],
)
def test_neo4j_errors_for_a_callers_query_are_the_callers_errors(code: str, error: type[LyraError], says: str) -> None:
    with pytest.raises(error) as info, translate_adhoc_errors(timeout=2.0):
        raise neo4j_error(code)
    assert type(info.value) is error and says in info.value.message
    assert isinstance(info.value, InvalidInputError) and info.value.field == "cypher"


def test_an_out_of_heap_apoc_call_and_a_shortest_path_between_one_node_are_the_callers_errors() -> None:
    oom = "Failed to invoke function `apoc.coll.fill`: Caused by: java.lang.OutOfMemoryError: Java heap space"
    with pytest.raises(QueryMemoryExceeded), translate_adhoc_errors(timeout=2.0):
        raise neo4j_error("Neo.ClientError.Procedure.ProcedureCallFailed", oom)
    same = "The shortest path algorithm does not work when the start and end nodes are the same. This can happen if"
    with pytest.raises(QueryFailed, match="start and end nodes are the same") as info, translate_adhoc_errors():
        raise neo4j_error("Neo.DatabaseError.Statement.ExecutionFailed", same)
    assert type(info.value) is QueryFailed and info.value.hint


def test_a_server_fault_while_running_an_ad_hoc_query_stays_a_server_error() -> None:
    with pytest.raises(GraphQueryError), translate_adhoc_errors():
        raise neo4j_error("Neo.DatabaseError.General.UnknownError")


def test_a_server_fault_while_planning_the_callers_text_is_the_callers_syntax_error() -> None:
    with pytest.raises(QuerySyntaxError, match="failed to plan"), translate_adhoc_errors(planning=True):
        raise neo4j_error("Neo.DatabaseError.General.UnknownError", "Index -1 out of bounds for length 0")


def test_named_statements_keep_their_errors_lyras_bugs_stay_500() -> None:
    with pytest.raises(GraphQueryError), translate_errors("cypher/x.cypher"):
        raise neo4j_error("Neo.ClientError.Statement.SyntaxError")


def test_a_unicode_error_from_the_driver_names_the_params() -> None:
    with pytest.raises(InvalidInputError) as info, translate_adhoc_errors():
        "\ud800".encode()
    assert info.value.field == "params"


# ----------------------------------------------------------------------------------------------- server config
def test_every_plug_in_procedure_lyras_statements_call_is_on_the_server_allow_list() -> None:
    called: set[str] = set()
    for path in (ROOT / "cypher").rglob("*.cypher"):
        text = re.sub(r"//[^\n]*", "", path.read_text(encoding="utf-8"))
        called.update(re.findall(r"\b((?:apoc|gds)(?:\.\w+)+)\s*\(", text))
    assert called and called <= set(guard.LYRA_PROCEDURES)
    allowed = guard.server_procedure_allowlist().split(",")
    assert set(guard.LYRA_PROCEDURES) <= set(allowed)
    assert set(guard.QUERY_FUNCTIONS) <= set(allowed)
    assert not any("*" in entry for entry in allowed)  # by name: a later APOC's new function is not loaded
    assert not set(guard.DROPPED_FUNCTIONS) & set(allowed)
    for forbidden in ("apoc.*", "apoc.load", "apoc.export", "apoc.import", "apoc.cypher", "apoc.periodic", "apoc.util"):
        assert not any(entry.startswith(forbidden) for entry in allowed), forbidden


def test_the_managed_neo4j_config_is_hardened(tmp_path: Path) -> None:
    server = LocalNeo4j(load_settings(state_dir=tmp_path), "test")
    server._write_config()
    conf = dict(
        line.split("=", 1)
        for line in (server.conf_dir / "neo4j.conf").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    )
    assert conf["dbms.security.procedures.allowlist"] == guard.server_procedure_allowlist()
    assert "dbms.security.procedures.unrestricted" not in conf
    assert conf["dbms.security.allow_csv_import_from_file_urls"] == "false"
    assert conf["internal.dbms.cypher_ip_blocklist"] == "0.0.0.0/0,::/0"
    apoc = (server.conf_dir / "apoc.conf").read_text(encoding="utf-8")
    for line in ("apoc.export.file.enabled=false", "apoc.import.file.enabled=false", "apoc.trigger.enabled=false"):
        assert line in apoc.splitlines()


def test_a_config_written_before_the_hardening_is_seen_as_outdated_and_rewritten(tmp_path: Path) -> None:
    server = LocalNeo4j(load_settings(state_dir=tmp_path), "test")
    server._write_config()
    assert not server.config_outdated()
    old = (server.conf_dir / "neo4j.conf").read_text(encoding="utf-8")
    (server.conf_dir / "neo4j.conf").write_text(
        old.split("# Hardening")[0] + "dbms.security.procedures.unrestricted=apoc.*\n", encoding="utf-8"
    )
    assert server.config_outdated()
    server._write_config()  # what the next start does
    assert (server.conf_dir / "neo4j.conf").read_text(encoding="utf-8") == old


def test_the_docker_compose_neo4j_carries_the_same_hardening() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    env = compose["services"]["neo4j"]["environment"]
    assert env["NEO4J_dbms_security_procedures_allowlist"] == guard.server_procedure_allowlist()
    assert "NEO4J_dbms_security_procedures_unrestricted" not in env
    assert env["NEO4J_dbms_security_allow__csv__import__from__file__urls"] == "false"
    assert env["NEO4J_internal_dbms_cypher__ip__blocklist"] == "0.0.0.0/0,::/0"
    assert env["NEO4J_apoc_export_file_enabled"] == env["NEO4J_apoc_import_file_enabled"] == "false"
