"""The read-only query door's guard: what caller-supplied Cypher may use, judged twice, by allow-lists.

1. **The statement** (:func:`check_statement`, no server needed). A tokenizer reads the text the way Neo4j does
   (comments, string literals, backtick-quoted names, whitespace between the parts of a dotted name), so
   ``apoc . load . json``, ``/**/``-separated or backtick-quoted names and names inside comments are seen for
   what they are. Every procedure called must be on :data:`QUERY_PROCEDURES`; every function called must be a
   built-in (:data:`BUILTIN_FUNCTIONS`) or live in one of :data:`QUERY_FUNCTION_NAMESPACES`. ``LOAD CSV``,
   ``USE``, ``IN TRANSACTIONS``, ``SHOW``/``TERMINATE`` and pre-parser options (``CYPHER``, ``EXPLAIN``,
   ``PROFILE``) are refused by name. Outside string literals only ASCII, spaces and letters, marks and digits of
   other scripts may appear: control, format (zero-width, bidi), line-separator and private-use characters are
   refused, and so are ``\\uXXXX`` escapes anywhere (Neo4j applies them before it reads the text), so no
   character can end a string or a comment, or join a name, for Neo4j but not for the guard.
2. **The plan** (:func:`check_plan`, from ``EXPLAIN``). Every operator in ``summary.plan``, children included,
   must be on :data:`READ_OPERATORS`; a ``ProcedureCall`` must name an allowed procedure; namespaced calls
   printed in an operator's details must be allowed functions or procedures. Writes, ``LoadCSV``, ``SHOW``/
   ``TERMINATE`` commands, ``CALL {} IN TRANSACTIONS`` and any operator a later Neo4j invents are refused
   because they are not on the list.

Names are compared case-folded and NFKC-normalised (Neo4j's own lookup is case-sensitive and does neither, so
this can only refuse more). :func:`server_procedure_allowlist` derives the managed Neo4j's
``dbms.security.procedures.allowlist`` from the same lists plus what Lyra's own statements call
(:data:`LYRA_PROCEDURES`), so the two layers cannot drift apart.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from lyra.core.errors import QueryRefused, QuerySyntaxError

FIELD = "cypher"

# ----------------------------------------------------------------------------------------------- allow-lists
# Every operator a plain read can be planned with in Neo4j 5.26 Community (names as in the Cypher manual's
# operator summary, with the ``@database`` suffix removed). Anything else is refused.
READ_OPERATORS: frozenset[str] = frozenset(
    {
        "ProduceResults",
        # leaves: scans and seeks
        "AllNodesScan",
        "NodeByLabelScan",
        "IntersectionNodeByLabelsScan",
        "SubtractionNodeByLabelsScan",
        "UnionNodeByLabelsScan",
        "NodeByIdSeek",
        "NodeByElementIdSeek",
        "NodeIndexSeek",
        "NodeUniqueIndexSeek",
        "MultiNodeIndexSeek",
        "NodeIndexSeekByRange",
        "NodeUniqueIndexSeekByRange",
        "NodeIndexContainsScan",
        "NodeIndexEndsWithScan",
        "NodeIndexScan",
        "NodeCountFromCountStore",
        "RelationshipCountFromCountStore",
        "DirectedAllRelationshipsScan",
        "UndirectedAllRelationshipsScan",
        "DirectedRelationshipTypeScan",
        "UndirectedRelationshipTypeScan",
        "DirectedUnionRelationshipTypesScan",
        "UndirectedUnionRelationshipTypesScan",
        "DirectedRelationshipByIdSeek",
        "UndirectedRelationshipByIdSeek",
        "DirectedRelationshipByElementIdSeek",
        "UndirectedRelationshipByElementIdSeek",
        "DirectedRelationshipIndexSeek",
        "UndirectedRelationshipIndexSeek",
        "DirectedRelationshipIndexSeekByRange",
        "UndirectedRelationshipIndexSeekByRange",
        "DirectedRelationshipIndexScan",
        "UndirectedRelationshipIndexScan",
        "DirectedRelationshipIndexContainsScan",
        "UndirectedRelationshipIndexContainsScan",
        "DirectedRelationshipIndexEndsWithScan",
        "UndirectedRelationshipIndexEndsWithScan",
        "Argument",
        "ArgumentTracker",
        "EmptyRow",
        # expands and paths
        "Expand(All)",
        "Expand(Into)",
        "OptionalExpand(All)",
        "OptionalExpand(Into)",
        "VarLengthExpand(All)",
        "VarLengthExpand(Into)",
        "VarLengthExpand(Pruning)",
        "VarLengthExpand(Pruning,BFS)",
        "ShortestPath",
        "StatefulShortestPath(All)",
        "StatefulShortestPath(Into)",
        "Repeat(Trail)",
        "NullifyMetadata",
        "ProjectEndpoints",
        "TriadicSelection",
        "TriadicBuild",
        "TriadicFilter",
        # filters, projections, aggregation, ordering, paging
        "Filter",
        "Projection",
        "CacheProperties",
        "Unwind",
        "Distinct",
        "OrderedDistinct",
        "EagerAggregation",
        "OrderedAggregation",
        "Sort",
        "PartialSort",
        "Top",
        "PartialTop",
        "Limit",
        "Skip",
        "Eager",
        # optional matches, joins, unions and the apply family of read subqueries (CALL {}, COUNT {},
        # COLLECT {}, EXISTS {}, pattern predicates and comprehensions)
        "Optional",
        "Anti",
        "Apply",
        "SemiApply",
        "AntiSemiApply",
        "LetSemiApply",
        "LetAntiSemiApply",
        "SelectOrSemiApply",
        "SelectOrAntiSemiApply",
        "LetSelectOrSemiApply",
        "LetSelectOrAntiSemiApply",
        "RollUpApply",
        "ConditionalApply",
        "AntiConditionalApply",
        "CartesianProduct",
        "NodeHashJoin",
        "ValueHashJoin",
        "NodeLeftOuterHashJoin",
        "NodeRightOuterHashJoin",
        "Union",
        "OrderedUnion",
        # only with an allowed procedure (checked by name)
        "ProcedureCall",
    }
)
# Read operators Neo4j prints with variants in brackets, e.g. VarLengthExpand(Pruning,BFS,All): any variant of
# these is a read.
READ_OPERATOR_FAMILIES: frozenset[str] = frozenset(
    {"Expand", "OptionalExpand", "VarLengthExpand", "StatefulShortestPath", "Repeat"}
)

# Why some well-known operators are refused (the message names the operator either way).
_OPERATOR_REASONS: dict[str, str] = {
    "LoadCSV": "LOAD CSV reads files and URLs",
    "TransactionApply": "CALL {} IN TRANSACTIONS commits on its own",
    "TransactionForeach": "CALL {} IN TRANSACTIONS commits on its own",
    "ShowTransactions": "it lists other sessions' queries",
    "TerminateTransactions": "it ends other sessions' transactions",
    "ShowSettings": "it reveals the server's configuration",
    "AdministrationCommand": "it administers the server (users, databases, privileges)",
}
_WRITE_OPERATOR = re.compile(
    r"^(Create|Merge|LockingMerge|Delete|DetachDelete|Set|Remove|Foreach|SubqueryForeach|Drop|DoNothingIfExists|"
    r"EmptyResult|ExhaustiveLimit|Assert)"
)

# Built-in procedures the door allows: the graph's vocabulary and schema, nothing that writes, waits or administers.
QUERY_PROCEDURES: frozenset[str] = frozenset(
    {
        "db.labels",
        "db.relationshipTypes",
        "db.propertyKeys",
        "db.schema.nodeTypeProperties",
        "db.schema.relTypeProperties",
        "db.schema.visualization",
    }
)

# Neo4j 5.26's built-in functions (SHOW FUNCTIONS WHERE isBuiltIn), less graph.byName/byElementId (composite
# databases) and file()/linenumber() (meaningful only inside LOAD CSV).
BUILTIN_FUNCTIONS: frozenset[str] = frozenset(
    {
        "abs", "acos", "all", "any", "asin", "atan", "atan2", "avg", "btrim", "ceil", "char_length",
        "character_length", "coalesce", "collect", "cos", "cot", "count", "date", "date.realtime",
        "date.statement", "date.transaction", "date.truncate", "datetime", "datetime.fromepoch",
        "datetime.fromepochmillis", "datetime.realtime", "datetime.statement", "datetime.transaction",
        "datetime.truncate", "degrees", "duration", "duration.between", "duration.inDays", "duration.inMonths",
        "duration.inSeconds", "e", "elementId", "endNode", "exists", "exp", "floor", "haversin", "head", "id",
        "isEmpty", "isNaN", "keys", "labels", "last", "left", "length", "localdatetime", "localdatetime.realtime",
        "localdatetime.statement", "localdatetime.transaction", "localdatetime.truncate", "localtime",
        "localtime.realtime", "localtime.statement", "localtime.transaction", "localtime.truncate", "log", "log10",
        "lower", "ltrim", "max", "min", "nodes", "none", "normalize", "nullIf", "percentileCont",
        "percentileDisc", "pi", "point", "point.distance", "point.withinBBox", "properties", "radians", "rand",
        "randomUUID", "range", "reduce", "relationships", "replace", "reverse", "right", "round", "rtrim", "sign",
        "sin", "single", "size", "split", "sqrt", "startNode", "stdev", "stdevp", "substring", "sum", "tail", "tan",
        "time", "time.realtime", "time.statement", "time.transaction", "time.truncate", "timestamp", "toBoolean",
        "toBooleanList", "toBooleanOrNull", "toFloat", "toFloatList", "toFloatOrNull", "toInteger",
        "toIntegerList", "toIntegerOrNull", "toLower", "toString", "toStringList", "toStringOrNull", "toUpper",
        "trim", "type", "upper", "valueType", "vector.similarity.cosine", "vector.similarity.euclidean",
    }
)  # fmt: skip

# APOC namespaces whose functions are pure (no I/O, no Cypher of their own, no writes). Their procedures are
# not allowed through the door (none is on QUERY_PROCEDURES); the few these namespaces hold are pure too.
QUERY_FUNCTION_NAMESPACES: tuple[str, ...] = (
    "apoc.coll",
    "apoc.text",
    "apoc.map",
    "apoc.math",
    "apoc.number",
    "apoc.date",
    "apoc.temporal",
    "apoc.agg",
)

# The plug-in procedures Lyra's own statements in cypher/ call (tests/unit/test_query_guard.py greps for them).
LYRA_PROCEDURES: tuple[str, ...] = ("apoc.lock.nodes",)


def server_procedure_allowlist() -> str:
    """``dbms.security.procedures.allowlist`` for a Neo4j serving Lyra: Lyra's own plug-in procedures and the
    APOC function namespaces the query door allows; nothing else of APOC is loaded."""
    return ",".join([*LYRA_PROCEDURES, *(f"{ns}.*" for ns in QUERY_FUNCTION_NAMESPACES)])


def canonical(name: str) -> str:
    """The form names are compared in: NFKC-normalised and case-folded."""
    return unicodedata.normalize("NFKC", name).casefold()


_PROCEDURES = frozenset(canonical(p) for p in QUERY_PROCEDURES)
_FUNCTIONS = frozenset(canonical(f) for f in BUILTIN_FUNCTIONS)
_FUNCTION_PREFIXES = tuple(canonical(ns) + "." for ns in QUERY_FUNCTION_NAMESPACES)


def procedure_allowed(name: str) -> bool:
    return canonical(name) in _PROCEDURES


def function_allowed(name: str) -> bool:
    key = canonical(name)
    return key in _FUNCTIONS or (key.startswith(_FUNCTION_PREFIXES) and key.count(".") == 2)


_ALLOWED_HINT = (
    "the read-only door allows MATCH/OPTIONAL MATCH/WITH/UNWIND/RETURN, read subqueries (CALL {}, COUNT {}, "
    f"COLLECT {{}}, EXISTS {{}}), built-in functions, the functions of {', '.join(QUERY_FUNCTION_NAMESPACES)} "
    f"and the procedures {', '.join(sorted(QUERY_PROCEDURES))}; writes go through Lyra's own commands"
)


def refuse(reason: str) -> QueryRefused:
    return QueryRefused(FIELD, reason, hint=_ALLOWED_HINT)


# ----------------------------------------------------------------------------------------------- tokenizer
TokenKind = Literal["name", "quoted", "string", "number", "param", "symbol"]


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str  # a name's or quoted name's text (backticks removed), a symbol's character; strings are not kept
    offset: int


_LINE_END = "\n\r"
# Neo4j 5.26 turns \uXXXX into its character before it lexes the statement (strings, names, comments alike), so
# such an escape could open or close a string, a quoted name or a comment behind the tokenizer's back. \U is
# refused too, for good measure.
_UNICODE_ESCAPE = re.compile(r"\\[uU]+[0-9A-Fa-f]{0,8}")
_ASCII_WHITESPACE = " \t\n\r"


def _describe(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed character')}"


def _code_char_ok(ch: str) -> bool:
    """Characters allowed in code and backtick-quoted names."""
    if " " <= ch <= "~" or ch in _ASCII_WHITESPACE:
        return True
    category = unicodedata.category(ch)
    return category[0] in "LMN" or category == "Zs"


def _comment_char_ok(ch: str) -> bool:
    """Characters allowed in comments: anything printable, but no control, format or line-separator character."""
    if ch in _ASCII_WHITESPACE:
        return True
    return unicodedata.category(ch) not in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")


def _is_name_start(ch: str) -> bool:
    return ch == "_" or ch.isalpha()


def _is_name_part(ch: str) -> bool:
    return ch == "_" or unicodedata.category(ch)[0] in "LMN"


def _is_space(ch: str) -> bool:
    return ch in _ASCII_WHITESPACE or unicodedata.category(ch) == "Zs"


def tokenize(cypher: str) -> list[Token]:
    """Cypher text → tokens, without comments and whitespace. Refuses characters that could make Neo4j read the
    text differently (see the module docstring); unterminated strings, names and comments are syntax errors."""
    escape = _UNICODE_ESCAPE.search(cypher)
    if escape:
        raise refuse(
            f"the unicode escape {escape.group()} at offset {escape.start()} is not allowed: Neo4j applies \\uXXXX "
            "escapes to the whole text before reading it (a \\u0027 ends a string, a \\u000a a comment); "
            "pass such text as a $parameter"
        )
    tokens: list[Token] = []
    i, n = 0, len(cypher)
    while i < n:
        ch = cypher[i]
        if cypher.startswith("//", i):
            end = i + 2
            while end < n and cypher[end] not in _LINE_END:
                end += 1
            _check_comment(cypher, i, end)
            if cypher.startswith("\r", end) and not cypher.startswith("\r\n", end):
                # Neo4j 5.26 ends the comment there too, but readers of the text (people, editors) may not.
                raise refuse(f"a carriage return without a line feed ends the comment at offset {i}")
            i = end
        elif cypher.startswith("/*", i):
            end = cypher.find("*/", i + 2)
            if end < 0:
                raise QuerySyntaxError(FIELD, f"the comment opened at offset {i} is never closed")
            _check_comment(cypher, i, end)
            i = end + 2
        elif not _code_char_ok(ch):
            raise refuse(f"character {_describe(ch)} at offset {i} is not allowed outside string literals")
        elif _is_space(ch):
            i += 1
        elif ch in "'\"":
            tokens.append(Token("string", "", i))
            i = _skip_string(cypher, i)
        elif ch == "`":
            text, i_next = _read_quoted(cypher, i)
            tokens.append(Token("quoted", text, i))
            i = i_next
        elif ch == "$":
            if i + 1 < n and cypher[i + 1] == "`":
                text, i_next = _read_quoted(cypher, i + 1)
            else:
                j = i + 1
                while j < n and _is_name_part(cypher[j]):
                    j += 1
                text, i_next = cypher[i + 1 : j], j
            if text:
                tokens.append(Token("param", text, i))
                i = i_next
            else:
                tokens.append(Token("symbol", "$", i))
                i += 1
        elif ch.isdigit():
            j = i + 1
            while j < n and (_is_name_part(cypher[j]) or (cypher[j] == "." and j + 1 < n and cypher[j + 1].isdigit())):
                j += 1
            tokens.append(Token("number", cypher[i:j], i))
            i = j
        elif _is_name_start(ch):
            j = i + 1
            while j < n and _is_name_part(cypher[j]):
                j += 1
            tokens.append(Token("name", cypher[i:j], i))
            i = j
        elif ch.isascii():
            tokens.append(Token("symbol", ch, i))
            i += 1
        else:  # a mark or number of another script that does not belong to a name
            raise refuse(f"character {_describe(ch)} at offset {i} is not allowed outside a name or string literal")
    return tokens


def _check_comment(cypher: str, start: int, end: int) -> None:
    for k in range(start, end):
        if not _comment_char_ok(cypher[k]):
            raise refuse(f"character {_describe(cypher[k])} at offset {k} is not allowed, not even in a comment")


def _skip_string(cypher: str, start: int) -> int:
    """Offset just past the string literal opening at ``start`` (a backslash escapes the next character)."""
    quote, i, n = cypher[start], start + 1, len(cypher)
    while i < n:
        if cypher[i] == "\\":
            i += 2
        elif cypher[i] == quote:
            return i + 1
        else:
            i += 1
    raise QuerySyntaxError(FIELD, f"the string literal opened at offset {start} is never closed")


def _read_quoted(cypher: str, start: int) -> tuple[str, int]:
    """A backtick-quoted name opening at ``start`` (a doubled backtick stands for one): (its text, offset past it)."""
    parts: list[str] = []
    i, n = start + 1, len(cypher)
    while i < n:
        ch = cypher[i]
        if ch == "`":
            if cypher.startswith("``", i):
                parts.append("`")
                i += 2
                continue
            return "".join(parts), i + 1
        if not _code_char_ok(ch):
            raise refuse(f"character {_describe(ch)} at offset {i} is not allowed in a quoted name")
        parts.append(ch)
        i += 1
    raise QuerySyntaxError(FIELD, f"the quoted name opened at offset {start} is never closed")


# ----------------------------------------------------------------------------------------------- statement check
# Unquoted words that may stand right before "(" without being a function call.
_KEYWORDS_BEFORE_PAREN = frozenset(
    {
        "match", "optional", "where", "and", "or", "xor", "not", "return", "with", "unwind", "in", "when", "then",
        "else", "case", "distinct", "call", "create", "merge", "delete", "detach", "nodetach", "set", "remove",
        "foreach", "exists", "count", "collect", "order", "by", "asc", "ascending", "desc", "descending", "skip",
        "limit", "offset", "as", "on", "union", "is", "null", "true", "false", "contains", "starts", "ends",
        "yield", "shortestpath", "allshortestpaths", "shortest", "groups", "group", "paths", "path", "repeatable",
        "different", "elements", "element", "relationships", "walk", "trail", "acyclic", "of", "rows",
        "finish", "insert", "filter", "extract", "from", "headers", "for", "require", "if",
    }
)  # fmt: skip
_CLAUSE_START_AFTER = frozenset({"union", "all"})


@dataclass(frozen=True)
class StatementNames:
    procedures: tuple[str, ...]
    functions: tuple[str, ...]


def _word(token: Token | None) -> str | None:
    """The canonical keyword a token could be (only unquoted names are keywords)."""
    return canonical(token.text) if token is not None and token.kind == "name" else None


def _is_dot(token: Token | None) -> bool:
    return token is not None and token.kind == "symbol" and token.text == "."


def _is_symbol(token: Token | None, text: str) -> bool:
    return token is not None and token.kind == "symbol" and token.text == text


def _at_clause_start(tokens: list[Token], index: int) -> bool:
    before = tokens[index - 1] if index else None
    return before is None or _is_symbol(before, "{") or _word(before) in _CLAUSE_START_AFTER


def _chain_forward(tokens: list[Token], start: int) -> tuple[str, int]:
    """The dotted name beginning at ``start``: (its text, index past it)."""
    parts = [tokens[start].text]
    i = start + 1
    while i + 1 < len(tokens) and _is_dot(tokens[i]) and tokens[i + 1].kind in ("name", "quoted"):
        parts.append(tokens[i + 1].text)
        i += 2
    return ".".join(parts), i


def _chain_backward(tokens: list[Token], end: int) -> tuple[str, int, bool]:
    """The dotted name ending at ``end``: (its text, index of its first part, whether any part was quoted)."""
    parts = [tokens[end].text]
    quoted = tokens[end].kind == "quoted"
    i = end
    while i >= 2 and _is_dot(tokens[i - 1]) and tokens[i - 2].kind in ("name", "quoted"):
        parts.append(tokens[i - 2].text)
        quoted = quoted or tokens[i - 2].kind == "quoted"
        i -= 2
    return ".".join(reversed(parts)), i, quoted


def statement_names(tokens: list[Token]) -> StatementNames:
    """The procedures and functions a statement calls (refuses the clauses it can name, see check_statement)."""
    procedures: list[str] = []
    functions: list[str] = []
    procedure_tokens: set[int] = set()
    for index, token in enumerate(tokens):
        word = _word(token)
        before = tokens[index - 1] if index else None
        after = tokens[index + 1] if index + 1 < len(tokens) else None
        if word is None or _is_dot(before) or _is_symbol(before, ":") or _is_symbol(after, ":"):
            continue
        if index == 0 and word in ("cypher", "explain", "profile"):
            raise refuse(f"{token.text.upper()} is not allowed: give the plain statement, without pre-parser options")
        if word == "load" and _word(after) == "csv":
            raise refuse("LOAD CSV is not allowed: it reads files and URLs")
        if word == "use" and _at_clause_start(tokens, index) and after is not None and after.kind in ("name", "quoted"):
            raise refuse("USE is not allowed: the door reads Lyra's database only")
        if word in ("show", "terminate") and _at_clause_start(tokens, index):
            raise refuse(f"{token.text.upper()} commands are not allowed: they administer the server")
        if word in ("transaction", "transactions") and _word(before) in ("in", "concurrent", "terminate", "show"):
            raise refuse(f"{str(_word(before)).upper()} {word.upper()} is not allowed: it commits or administers")
        if word == "call" and after is not None and after.kind in ("name", "quoted"):
            name, past = _chain_forward(tokens, index + 1)
            procedures.append(name)
            procedure_tokens.update(range(index + 1, past))
    for index, token in enumerate(tokens):
        if not _is_symbol(token, "(") or index == 0:
            continue
        last = tokens[index - 1]
        if last.kind not in ("name", "quoted") or index - 1 in procedure_tokens:
            continue
        name, first, quoted = _chain_backward(tokens, index - 1)
        if first != index - 1 or quoted or canonical(name) not in _KEYWORDS_BEFORE_PAREN:
            functions.append(name)
    return StatementNames(tuple(procedures), tuple(functions))


def check_statement(cypher: str) -> StatementNames:
    """Refuse the statement unless every procedure and function it names is allowed (see the module docstring)."""
    names = statement_names(tokenize(cypher))
    for procedure in names.procedures:
        if not procedure_allowed(procedure):
            raise refuse(f"procedure {procedure} is not allowed")
    for function in names.functions:
        if not function_allowed(function):
            raise refuse(f"function {function}() is not allowed")
    return names


# ----------------------------------------------------------------------------------------------- plan check
_PLAN_CALL = re.compile(r"((?:[A-Za-z_]\w*|`[^`]*`)(?:\s*\.\s*(?:[A-Za-z_]\w*|`[^`]*`))+)\s*\(")


def _plan_name(text: str) -> str:
    return ".".join(part.strip().strip("`") for part in re.split(r"\s*\.\s*(?=[A-Za-z_`])", text.strip()))


def operators(plan: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    """(operator, details) for every operator of a ``summary.plan`` tree, depth first."""
    pending: list[Mapping[str, Any]] = [plan]
    while pending:
        node = pending.pop()
        operator = str(node.get("operatorType", "")).split("@", 1)[0]
        args = node.get("args") or {}
        yield operator, str(args.get("Details", ""))
        pending.extend(node.get("children") or [])


def operator_allowed(operator: str) -> bool:
    return operator in READ_OPERATORS or (
        operator.endswith(")") and operator.split("(", 1)[0] in READ_OPERATOR_FAMILIES
    )


def check_plan(plan: Mapping[str, Any] | None) -> None:
    """Refuse a plan holding an operator not on READ_OPERATORS, a procedure not on QUERY_PROCEDURES, or a
    namespaced call that is neither an allowed function nor an allowed procedure. The refusal names every
    operator that is not allowed."""
    if not plan:
        raise refuse("Neo4j returned no plan for it, so it cannot be checked")
    refused: list[str] = []
    for operator, details in operators(plan):
        if not operator_allowed(operator):
            if operator not in refused:
                refused.append(operator)
            continue
        if operator == "ProcedureCall":
            procedure = _plan_name(details.split("(", 1)[0])
            if not procedure_allowed(procedure):
                raise refuse(f"procedure {procedure} is not allowed")
        for match in _PLAN_CALL.finditer(details):
            name = _plan_name(match.group(1))
            if not (function_allowed(name) or procedure_allowed(name)):
                raise refuse(f"function {name}() is not allowed")
    if refused:
        reasons = [_OPERATOR_REASONS[op] for op in refused if op in _OPERATOR_REASONS]
        if any(_WRITE_OPERATOR.match(op) for op in refused):
            reasons.append("it writes; only read-only queries are allowed")
        why = "; ".join(reasons) or "they are not among the read operators the door allows"
        listed = ", ".join(refused)
        raise refuse(f"Neo4j plans it with {listed}, which the door does not allow: {why}")


# ----------------------------------------------------------------------------------------------- result size
def json_size(value: Any, limit: int) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON; stops counting (returning a number above ``limit``) as soon as it
    passes ``limit``, so a huge string or list is never serialised just to be measured."""
    total = 0
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if item is None or isinstance(item, bool):
            total += 4 if item is None or item is True else 5
        elif isinstance(item, str):
            if len(item) > limit - total:  # at least one byte per character
                return limit + 1
            total += len(json.dumps(item, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        elif isinstance(item, int):
            total += len(str(item))
        elif isinstance(item, float):
            total += len(repr(item)) if math.isfinite(item) else 4
        elif isinstance(item, Mapping):
            total += 2 + max(len(item) - 1, 0)  # braces and commas
            for key, val in item.items():
                total += 1  # colon
                pending.append(str(key))
                pending.append(val)
        elif isinstance(item, list | tuple):
            total += 2 + max(len(item) - 1, 0)
            pending.extend(item)
        elif isinstance(item, bytes | bytearray):
            total += 2 + 4 * len(item)  # at worst a list of small numbers
        else:
            pending.append(str(item))
        if total > limit:
            return limit + 1
    return total
