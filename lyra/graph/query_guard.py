"""The read-only query door's guard: what caller-supplied Cypher may use, judged twice, by allow-lists.

1. **The statement** (:func:`check_statement`, no server needed). A tokenizer reads the text the way Neo4j does
   (comments, string literals, backtick-quoted names, whitespace between the parts of a dotted name), so
   ``apoc . load . json``, ``/**/``-separated or backtick-quoted names and names inside comments are seen for
   what they are. Every procedure called must be on :data:`QUERY_PROCEDURES`; every function called must be a
   built-in (:data:`BUILTIN_FUNCTIONS`) or one of :data:`QUERY_FUNCTIONS` (APOC functions whose work is linear
   in their input). ``LOAD CSV``, ``USE``, ``IN TRANSACTIONS``, ``SHOW``/``TERMINATE``, administration commands
   (``START DATABASE``, ``GRANT`` ...) and pre-parser options (``CYPHER``, ``EXPLAIN``, ``PROFILE``) are refused by
   name. The statement's size is bounded (:class:`GuardLimits`): tokens, nesting of ``( [ { CASE``, the sizes of
   the few calls whose result size is an argument (:data:`AMPLIFIERS`, checked against literal or parameter
   values), and nesting of list comprehensions and quantifiers, because Neo4j checks neither its timeout nor its
   memory limit inside one expression. Outside string literals only ASCII, spaces and letters, marks and digits of
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
        "randomUUID", "range", "relationships", "replace", "reverse", "right", "round", "rtrim", "sign",
        "sin", "single", "size", "split", "sqrt", "startNode", "stdev", "stdevp", "substring", "sum", "tail", "tan",
        "time", "time.realtime", "time.statement", "time.transaction", "time.truncate", "timestamp", "toBoolean",
        "toBooleanList", "toBooleanOrNull", "toFloat", "toFloatList", "toFloatOrNull", "toInteger",
        "toIntegerList", "toIntegerOrNull", "toLower", "toString", "toStringList", "toStringOrNull", "toUpper",
        "trim", "type", "upper", "valueType", "vector.similarity.cosine", "vector.similarity.euclidean",
    }
)  # fmt: skip

# The APOC functions the door allows, each pure (no I/O, no Cypher of its own, no writes) and doing work linear
# (or n log n) in the size of its arguments. Neo4j checks neither its transaction timeout nor its memory limit
# inside one function call, so a function whose work or result can outgrow its input ran on and filled the heap
# (decision record 0014); those are left out (DROPPED_FUNCTIONS says why) or, for the few whose size is one argument,
# allowed with that argument capped before the query runs (AMPLIFIERS). Measured on Neo4j 5.26 + APOC 5.26 with a 1 GB
# heap, docs/guides/query-door.md.
QUERY_FUNCTIONS: frozenset[str] = frozenset(
    {
        # aggregations that keep O(1) state (median, percentiles, slice, minItems/maxItems, graph keep every row,
        # outside Neo4j's memory tracker)
        "apoc.agg.first", "apoc.agg.last", "apoc.agg.nth", "apoc.agg.product",
        "apoc.coll.avg", "apoc.coll.contains", "apoc.coll.containsDuplicates", "apoc.coll.containsSorted",
        "apoc.coll.different", "apoc.coll.dropDuplicateNeighbors", "apoc.coll.duplicates",
        "apoc.coll.duplicatesWithCount", "apoc.coll.flatten", "apoc.coll.frequencies", "apoc.coll.frequenciesAsMap",
        "apoc.coll.indexOf", "apoc.coll.insert", "apoc.coll.insertAll", "apoc.coll.max", "apoc.coll.min",
        "apoc.coll.occurrences", "apoc.coll.pairWithOffset", "apoc.coll.pairs", "apoc.coll.pairsMin",
        "apoc.coll.partition", "apoc.coll.randomItem", "apoc.coll.remove", "apoc.coll.runningTotal",
        "apoc.coll.set", "apoc.coll.shuffle", "apoc.coll.sort", "apoc.coll.sortMaps", "apoc.coll.sortMulti",
        "apoc.coll.sortNodes", "apoc.coll.sortText", "apoc.coll.stdev", "apoc.coll.subtract", "apoc.coll.sum",
        "apoc.coll.sumLongs", "apoc.coll.toSet", "apoc.coll.unionAll", "apoc.coll.zip",
        "apoc.date.add", "apoc.date.convert", "apoc.date.convertFormat", "apoc.date.currentTimestamp",
        "apoc.date.field", "apoc.date.fields", "apoc.date.format", "apoc.date.fromISO8601", "apoc.date.parse",
        "apoc.date.systemTimezone", "apoc.date.toISO8601", "apoc.date.toYears",
        "apoc.map.clean", "apoc.map.flatten", "apoc.map.fromLists", "apoc.map.fromPairs", "apoc.map.fromValues",
        "apoc.map.get", "apoc.map.groupBy", "apoc.map.groupByMulti", "apoc.map.merge", "apoc.map.mergeList",
        "apoc.map.mget", "apoc.map.removeKey", "apoc.map.removeKeys", "apoc.map.setEntry", "apoc.map.setKey",
        "apoc.map.setLists", "apoc.map.setPairs", "apoc.map.setValues", "apoc.map.sortedProperties",
        "apoc.map.submap", "apoc.map.unflatten", "apoc.map.updateTree", "apoc.map.values",
        "apoc.math.cosh", "apoc.math.coth", "apoc.math.csch", "apoc.math.maxByte", "apoc.math.maxDouble",
        "apoc.math.maxInt", "apoc.math.maxLong", "apoc.math.minByte", "apoc.math.minDouble", "apoc.math.minInt",
        "apoc.math.minLong", "apoc.math.sech", "apoc.math.sigmoid", "apoc.math.sigmoidPrime", "apoc.math.sinh",
        "apoc.math.tanh",
        "apoc.number.exact.add", "apoc.number.exact.sub", "apoc.number.exact.toExact", "apoc.number.format",
        "apoc.number.parseFloat", "apoc.number.parseInt", "apoc.number.romanToArabic",
        "apoc.temporal.format", "apoc.temporal.formatDuration", "apoc.temporal.toZonedTemporal",
        "apoc.text.base64Decode", "apoc.text.base64Encode", "apoc.text.base64UrlDecode", "apoc.text.base64UrlEncode",
        "apoc.text.byteCount", "apoc.text.bytes", "apoc.text.camelCase", "apoc.text.capitalize",
        "apoc.text.capitalizeAll", "apoc.text.charAt", "apoc.text.clean", "apoc.text.code",
        "apoc.text.compareCleaned", "apoc.text.decapitalize", "apoc.text.decapitalizeAll",
        "apoc.text.doubleMetaphone", "apoc.text.hammingDistance", "apoc.text.hexCharAt", "apoc.text.hexValue",
        "apoc.text.indexOf", "apoc.text.indexesOf", "apoc.text.join", "apoc.text.lpad", "apoc.text.phonetic",
        "apoc.text.repeat", "apoc.text.rpad", "apoc.text.slug", "apoc.text.snakeCase",
        "apoc.text.sorensenDiceSimilarity", "apoc.text.swapCase", "apoc.text.toCypher", "apoc.text.toUpperCase",
        "apoc.text.upperCamelCase", "apoc.text.urldecode", "apoc.text.urlencode",
    }
)  # fmt: skip

_QUADRATIC = "its work grows with the product of its arguments' sizes and Neo4j cannot stop it mid-call"
_REGEX = "a regular expression can backtrack for exponential time inside one call, which Neo4j cannot stop"
_UNTRACKED_AGG = "it keeps every row outside Neo4j's memory tracker"
# Functions of the APOC namespaces the door once allowed, now refused, and why (the refusal says it).
DROPPED_FUNCTIONS: dict[str, str] = {
    "apoc.coll.combinations": "its result grows exponentially with its input (C(40,20) lists ran Neo4j out of heap)",
    "apoc.coll.fill": "its result size is an argument (fill('x', 200000000) ran Neo4j out of heap)",
    "apoc.coll.randomItems": "its result size is an argument",
    "apoc.coll.removeAll": _QUADRATIC + " (two 100,000-item lists: 70 s past a 5 s limit)",
    "apoc.coll.containsAll": _QUADRATIC + " (two 100,000-item lists stopped Neo4j)",
    "apoc.coll.containsAllSorted": _QUADRATIC,
    "apoc.coll.intersection": _QUADRATIC + " (two 100,000-item lists stopped Neo4j)",
    "apoc.coll.union": _QUADRATIC + " (two 100,000-item lists stopped Neo4j)",
    "apoc.coll.disjunction": _QUADRATIC,
    "apoc.coll.isEqualCollection": _QUADRATIC,
    "apoc.text.levenshteinDistance": _QUADRATIC + " (two 60,000-character strings: 10.7 s past a 5 s limit)",
    "apoc.text.levenshteinSimilarity": _QUADRATIC,
    "apoc.text.distance": _QUADRATIC,
    "apoc.text.fuzzyMatch": _QUADRATIC,
    "apoc.text.jaroWinklerDistance": _QUADRATIC,
    "apoc.text.format": "a format width (%999999999s) sets its result size",
    "apoc.text.random": "its result size is an argument",
    "apoc.text.regexGroups": _REGEX,
    "apoc.text.regexGroupsByName": _REGEX,
    "apoc.text.regreplace": _REGEX,
    "apoc.text.replace": _REGEX,
    "apoc.text.split": _REGEX,
    "apoc.number.arabicToRoman": "its result grows with its argument's value (one M per thousand)",
    "apoc.number.exact.mul": _QUADRATIC,
    "apoc.number.exact.div": "its precision argument sets its result size",
    "apoc.number.exact.toFloat": "its precision argument sets its work",
    "apoc.number.exact.toInteger": "its precision argument sets its work",
    "apoc.map.fromNodes": "it reads every node of a label into one value, outside Neo4j's memory tracker",
    "apoc.agg.median": _UNTRACKED_AGG,
    "apoc.agg.percentiles": _UNTRACKED_AGG,
    "apoc.agg.statistics": _UNTRACKED_AGG,
    "apoc.agg.slice": _UNTRACKED_AGG,
    "apoc.agg.graph": _UNTRACKED_AGG,
    "apoc.agg.maxItems": _UNTRACKED_AGG,
    "apoc.agg.minItems": _UNTRACKED_AGG,
    # a built-in: its accumulator can double at each step (reduce(s = 'ab', i IN range(1, 40) | s + s)), and
    # Neo4j checks neither timeout nor memory inside one expression (range(1, 2e9) summed on for 28 s past 5 s)
    "reduce": "its accumulator can grow at every step inside one expression, which Neo4j can neither time out "
    "nor measure; use apoc.coll.sum([x IN list | ...]) or apoc.text.join(...)",
}

# Calls whose result size is one of their arguments: (index of the count argument, index of an argument whose
# length multiplies it, or None). Their counts must be integer literals or $parameters, their sum at most
# GuardLimits.max_elements, and they may not stand inside a list comprehension's or quantifier's body.
AMPLIFIERS: dict[str, tuple[int, int | None]] = {
    "range": (1, None),  # range(start, end[, step]): counted from all its arguments
    "apoc.text.repeat": (1, 0),
    "apoc.text.lpad": (1, None),
    "apoc.text.rpad": (1, None),
}
# replace(text, search, replacement) multiplies text by replacement: the replacement must be short and known.
MAX_REPLACEMENT_CHARS = 100

# The plug-in procedures Lyra's own statements in cypher/ call (tests/unit/graph/test_query_guard.py greps for them).
LYRA_PROCEDURES: tuple[str, ...] = ("apoc.lock.nodes",)


def server_procedure_allowlist() -> str:
    """``dbms.security.procedures.allowlist`` for a Neo4j serving Lyra: Lyra's own plug-in procedures and the
    APOC functions the query door allows, by name; nothing else of APOC is loaded."""
    return ",".join([*LYRA_PROCEDURES, *sorted(QUERY_FUNCTIONS)])


@dataclass(frozen=True)
class GuardLimits:
    """The statement's size limits (settings ``LYRA_QUERY_MAX_*``, docs/reference/settings.md)."""

    max_tokens: int = 3000  # 6,000 terms of 1+1+... planned for 22 s past a 5 s limit
    max_depth: int = 64  # 1,000 nested ( stopped Neo4j's parser (StackOverflowError, defunct connection)
    max_elements: int = 1_000_000  # the sum of range()/repeat()/lpad()/rpad() sizes
    max_iteration_depth: int = 1  # list comprehensions/quantifiers inside one another


def canonical(name: str) -> str:
    """The form names are compared in: NFKC-normalised and case-folded."""
    return unicodedata.normalize("NFKC", name).casefold()


_PROCEDURES = frozenset(canonical(p) for p in QUERY_PROCEDURES)
_FUNCTIONS = frozenset(canonical(f) for f in BUILTIN_FUNCTIONS)
_FUNCTIONS_APOC = frozenset(canonical(f) for f in QUERY_FUNCTIONS)
_DROPPED = {canonical(name): why for name, why in DROPPED_FUNCTIONS.items()}


def procedure_allowed(name: str) -> bool:
    return canonical(name) in _PROCEDURES


def function_allowed(name: str) -> bool:
    key = canonical(name)
    return key in _FUNCTIONS or key in _FUNCTIONS_APOC


_ALLOWED_HINT = (
    "the read-only door allows MATCH/OPTIONAL MATCH/WITH/UNWIND/RETURN, read subqueries (CALL {}, COUNT {}, "
    "COLLECT {}, EXISTS {}), built-in functions but reduce(), the pure APOC functions of apoc.coll/text/map/math/"
    "number/date/temporal/agg whose work is linear in their input (SHOW FUNCTIONS lists them; "
    "lyra.graph.query_guard.QUERY_FUNCTIONS) and the procedures "
    f"{', '.join(sorted(QUERY_PROCEDURES))}; writes go through Lyra's own commands"
)


def refuse(reason: str) -> QueryRefused:
    return QueryRefused(FIELD, reason, hint=_ALLOWED_HINT)


# ----------------------------------------------------------------------------------------------- tokenizer
TokenKind = Literal["name", "quoted", "string", "number", "param", "symbol"]


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str  # a name's or quoted name's text (backticks removed), a symbol's character, a string's raw text
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
            end = _skip_string(cypher, i)
            tokens.append(Token("string", cypher[i + 1 : end - 1], i))
            i = end
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


def check_statement(
    cypher: str, params: Mapping[str, Any] | None = None, limits: GuardLimits | None = None
) -> StatementNames:
    """Refuse the statement unless it is within ``limits`` and every procedure and function it names is allowed
    (see the module docstring). ``params`` are the values amplifier counts given as $parameters take."""
    limits = limits or GuardLimits()
    tokens = tokenize(cypher)
    _check_depth(tokens, limits)
    if len(tokens) > limits.max_tokens:
        raise refuse(
            f"the statement has {len(tokens):,} tokens, more than the {limits.max_tokens:,} the door allows "
            "(LYRA_QUERY_MAX_TOKENS): Neo4j plans long expressions for longer than the query's time limit"
        )
    _check_administration(tokens)
    names = statement_names(tokens)
    for procedure in names.procedures:
        if not procedure_allowed(procedure):
            raise refuse(f"procedure {procedure} is not allowed")
    for function in names.functions:
        if not function_allowed(function):
            why = _DROPPED.get(canonical(function))
            raise refuse(f"function {function}() is not allowed" + (f": {why}" if why else ""))
    _check_structure(tokens, params or {}, limits)
    return names


# ----------------------------------------------------------------------------------------------- administration
_ADMIN_WORDS = frozenset({"start", "stop", "grant", "deny", "revoke", "alter", "rename", "enable", "dryrun",
                          "deallocate", "reallocate", "drop"})  # fmt: skip
_ADMIN_OBJECTS = frozenset({"database", "databases", "alias", "user", "role", "roles", "server", "composite",
                            "index", "constraint", "privilege", "privileges", "or", "if", "immutable"})  # fmt: skip


def _check_administration(tokens: list[Token]) -> None:
    """Refuse administration commands by name (Neo4j Community fails most of them only for want of the edition)."""
    for index, token in enumerate(tokens):
        word = _word(token)
        if word is None or not _at_clause_start(tokens, index):
            continue
        after = tokens[index + 1] if index + 1 < len(tokens) else None
        if word in _ADMIN_WORDS or (word == "create" and _word(after) in _ADMIN_OBJECTS):
            words = [token.text.upper()]
            for following in tokens[index + 1 : index + 5]:  # CREATE [OR REPLACE] [COMPOSITE] DATABASE, GRANT ROLE
                if following.kind != "name":
                    break
                words.append(following.text.upper())
                if _word(following) not in ("or", "replace", "composite"):
                    break
            command = " ".join(words)
            raise refuse(f"{command} is an administration command; the door runs read-only queries only")


# ----------------------------------------------------------------------------------------------- structure
_QUANTIFIERS = frozenset({"all", "any", "none", "single"})


@dataclass
class _Frame:
    opener: str  # "(", "[", "{" or "case"
    iteration: bool = False  # a list comprehension or quantifier (``x IN list``) not yet in its body
    body: bool = False  # inside that iteration's body (after its WHERE or |)


def _closing(tokens: list[Token], start: int) -> int:
    """Index of the ")" matching the "(" at ``start`` (or len(tokens))."""
    depth = 0
    for i in range(start, len(tokens)):
        if _is_symbol(tokens[i], "("):
            depth += 1
        elif _is_symbol(tokens[i], ")"):
            depth -= 1
            if depth == 0:
                return i
    return len(tokens)


def _arguments(tokens: list[Token], open_paren: int) -> list[list[Token]]:
    """The arguments of the call whose "(" is at ``open_paren``, split at top-level commas."""
    args: list[list[Token]] = [[]]
    depth = 0
    for token in tokens[open_paren + 1 : _closing(tokens, open_paren)]:
        if token.kind == "symbol" and token.text in "([{":
            depth += 1
        elif token.kind == "symbol" and token.text in ")]}":
            depth -= 1
        if depth == 0 and _is_symbol(token, ","):
            args.append([])
        else:
            args[-1].append(token)
    return [a for a in args if a] if args != [[]] else []


def _known_int(arg: list[Token], params: Mapping[str, Any], call: str) -> int:
    """An amplifier's count argument: an integer literal (maybe negative) or an integer $parameter."""
    sign = 1
    if len(arg) == 2 and _is_symbol(arg[0], "-"):
        sign, arg = -1, arg[1:]
    if len(arg) == 1 and arg[0].kind == "number" and arg[0].text.isdigit():
        return sign * int(arg[0].text)
    if len(arg) == 1 and arg[0].kind == "param" and isinstance(params.get(arg[0].text), int):
        return sign * int(params[arg[0].text])
    raise refuse(
        f"{call}()'s size arguments must be integer literals or integer $parameters, so the door can bound them "
        "before the query runs (to iterate over rows, use UNWIND range(...), whose rows Neo4j streams)"
    )


def _known_text_length(arg: list[Token], params: Mapping[str, Any]) -> int | None:
    """The length of a string literal (its raw text, escapes counted as written) or a string $parameter."""
    if len(arg) == 1 and arg[0].kind == "param" and isinstance(params.get(arg[0].text), str):
        return len(params[arg[0].text])
    if len(arg) == 1 and arg[0].kind == "string":
        return len(arg[0].text)
    return None


def _amplifier_size(name: str, args: list[list[Token]], params: Mapping[str, Any]) -> int:
    if name == "range":
        if len(args) not in (2, 3):
            return 0  # Neo4j refuses the call itself
        start, end = _known_int(args[0], params, name), _known_int(args[1], params, name)
        step = _known_int(args[2], params, name) if len(args) == 3 else 1
        return 0 if step == 0 else max(0, (end - start) // step + 1)
    count_at, multiplier_at = AMPLIFIERS[name]
    if len(args) <= count_at:
        return 0
    count = max(0, _known_int(args[count_at], params, name))
    if multiplier_at is not None:
        length = _known_text_length(args[multiplier_at], params)
        if length is None:
            raise refuse(f"{name}()'s text must be a string literal or a $parameter, so its result size is known")
        return count * max(length, 1)
    return count


def _opens(tokens: list[Token], index: int) -> str | None:
    """The nesting a token opens: "(", "[", "{", "case" (a CASE keyword, not a property or label named case)."""
    token = tokens[index]
    if token.kind == "symbol" and token.text in "([{":
        return token.text
    before = tokens[index - 1] if index else None
    if _word(token) == "case" and not (_is_dot(before) or _is_symbol(before, ":")):
        return "case"
    return None


def _closes(tokens: list[Token], index: int, top: str | None) -> bool:
    token = tokens[index]
    before = tokens[index - 1] if index else None
    if token.kind == "symbol" and token.text in ")]}":
        return True
    return top == "case" and _word(token) == "end" and not (_is_dot(before) or _is_symbol(before, ":"))


def _check_depth(tokens: list[Token], limits: GuardLimits) -> None:
    """Refuse nesting of ( [ { and CASE deeper than limits.max_depth (checked before anything else)."""
    stack: list[str] = []
    for index, token in enumerate(tokens):
        opener = _opens(tokens, index)
        if opener is not None:
            stack.append(opener)
            if len(stack) > limits.max_depth:
                raise refuse(
                    f"the statement nests ( [ {{ and CASE more than {limits.max_depth} deep (the door's limit, "
                    f"LYRA_QUERY_MAX_DEPTH) at offset {token.offset}: deep nesting overflows Neo4j's parser stack"
                )
        elif stack and _closes(tokens, index, stack[-1]):
            stack.pop()


def _check_structure(tokens: list[Token], params: Mapping[str, Any], limits: GuardLimits) -> None:
    """Nesting depth, iteration depth and amplifier sizes (see GuardLimits)."""
    stack: list[_Frame] = []
    elements = 0
    for index, token in enumerate(tokens):
        before = tokens[index - 1] if index else None
        after = tokens[index + 1] if index + 1 < len(tokens) else None
        word = _word(token) if not (_is_dot(before) or _is_symbol(before, ":")) else None
        opener = _opens(tokens, index)
        if opener is not None:
            binds = (
                after is not None
                and after.kind in ("name", "quoted")
                and _word(tokens[index + 2] if index + 2 < len(tokens) else None) == "in"
            )
            iteration = binds and (opener == "[" or (opener == "(" and _word(before) in _QUANTIFIERS))
            stack.append(_Frame(opener, iteration=iteration))
        elif stack and _closes(tokens, index, stack[-1].opener):
            stack.pop()
        elif stack and stack[-1].iteration and not stack[-1].body and (word == "where" or _is_symbol(token, "|")):
            stack[-1].body = True
            bodies = sum(frame.body for frame in stack)
            if bodies > limits.max_iteration_depth:
                raise refuse(
                    f"list comprehensions or quantifiers nest {bodies} deep at offset {token.offset}, more than the "
                    f"{limits.max_iteration_depth} the door allows (LYRA_QUERY_MAX_ITERATION_DEPTH): their work "
                    "multiplies inside one expression, where Neo4j checks neither time nor memory; "
                    "use UNWIND for the outer list"
                )
        if token.kind in ("name", "quoted") and _is_symbol(after, "("):
            name, first, _ = _chain_backward(tokens, index)
            key = canonical(name)
            amplifier = next((a for a in AMPLIFIERS if canonical(a) == key), None)
            if key == "replace":
                args = _arguments(tokens, index + 1)
                if len(args) == 3:
                    length = _known_text_length(args[2], params)
                    if length is None or length > MAX_REPLACEMENT_CHARS:
                        raise refuse(
                            f"replace()'s replacement must be a string literal or a $parameter of at most "
                            f"{MAX_REPLACEMENT_CHARS} characters: it multiplies the text's size"
                        )
            if amplifier is None:
                continue
            if amplifier == "range" and _word(tokens[first - 1] if first else None) == "unwind":
                end = _closing(tokens, index + 1)
                if _word(tokens[end + 1] if end + 1 < len(tokens) else None) == "as":
                    continue  # UNWIND range(...) AS x: Neo4j streams the rows and stops them at the timeout
            if any(frame.body for frame in stack):
                raise refuse(
                    f"{name}() at offset {token.offset} stands inside a list comprehension's or quantifier's body, "
                    "where its result would be built again for every element; compute it once outside (WITH)"
                )
            elements += _amplifier_size(amplifier, _arguments(tokens, index + 1), params)
            if elements > limits.max_elements:
                raise refuse(
                    f"range()/apoc.text.repeat()/lpad()/rpad() here build {elements:,} elements, more than the "
                    f"{limits.max_elements:,} the door allows (LYRA_QUERY_MAX_ELEMENTS): Neo4j builds them inside "
                    "one expression, outside its memory limit"
                )


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
