"""Every Cypher statement that weighs a stance edge leaves out the edges that count for nothing with the same
predicate: retracted (decision record 0015) or superseded (decision record 0016). A statement that tests one flag
without the other would count a superseded edge as evidence, or subtract it from the sums a second time."""

from __future__ import annotations

import re
from pathlib import Path

CYPHER = Path(__file__).resolve().parents[3] / "cypher"
# r.retracted = true, edge.retracted = true, props.retracted = true, x[0].retracted = true
FLAG = re.compile(r"(?P<var>[\w\[\]0-9]+)\.(?P<flag>retracted|superseded) = true")
# the statements that decide the flags (they read them to change them, not to weigh the edge)
SETTERS = {"retractions/retract_edges.cypher", "freshness/supersede_passages.cypher"}


def weighing_tests() -> list[tuple[str, str, str]]:
    found: list[tuple[str, str, str]] = []
    for path in sorted(CYPHER.rglob("*.cypher")):
        name = path.relative_to(CYPHER).as_posix()
        if name in SETTERS:
            continue
        for line in path.read_text().splitlines():
            code = line.split("//", 1)[0]
            for match in FLAG.finditer(code):
                if not re.match(r"[^,]*THEN (null|0\.0)\b", code[match.end() :]):
                    continue  # not a weighing (CASE WHEN <flag> THEN null | 0.0): a SET, or a timeline listing
                found.append((name, match.group("var"), code.strip()))
    return found


def test_every_test_of_one_flag_is_the_shared_predicate() -> None:
    tests = weighing_tests()
    assert len({name for name, _, _ in tests}) >= 10  # the statements that weigh edges are all found
    for name, var, code in tests:
        shared = f"({var}.retracted = true OR {var}.superseded = true)"
        assert shared in code, f"{name}: {code!r} tests one flag without the other; use {shared}"
