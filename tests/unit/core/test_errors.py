"""The error tree: the docstring of lyra/core/errors.py is the truth about the classes, every error Lyra raises
on purpose belongs to it, and nothing raises the bare root."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from lyra.core import errors
from tests.support.error_tree import error_classes

PACKAGE = Path(__file__).resolve().parents[3] / "lyra"
_ROW = re.compile(r"^(?P<indent>[│ ]*)(?:[├└]── )?(?P<name>[A-Za-z0-9]+) \[(?P<code>[a-z0-9_]+)\]")


def documented_tree() -> dict[str, tuple[str | None, str]]:
    """{class name: (parent name, code)} read from the docstring's drawing."""
    doc = errors.__doc__ or ""
    lines = doc[doc.index("LyraError [") :].splitlines()
    tree: dict[str, tuple[str | None, str]] = {}
    stack: list[tuple[int, str]] = []
    for line in lines:
        match = _ROW.match(line.strip("\n")[4:] if line.startswith("    ") else line)
        if not match:
            break
        depth = len(match["indent"]) // 4 + (0 if match["name"] == "LyraError" else 1)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        tree[match["name"]] = (stack[-1][1] if stack else None, match["code"])
        stack.append((depth, match["name"]))
    return tree


def test_the_docstring_tree_matches_the_classes_parents_and_codes() -> None:
    import lyra.bootstrap  # noqa: F401  (imports every module that could define an error)

    tree = documented_tree()
    classes = error_classes()
    assert set(tree) == set(classes)
    for name, (parent, code) in tree.items():
        cls = classes[name]
        assert cls.code == code, name
        assert (cls.__bases__[0].__name__ if name != "LyraError" else None) == parent, name


def test_every_error_class_lives_in_core_errors() -> None:
    for name, cls in error_classes().items():
        assert cls.__module__ == "lyra.core.errors", f"{name} is defined in {cls.__module__}"


def test_no_code_raises_the_bare_root_error() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                func = node.exc.func
                if isinstance(func, ast.Name) and func.id == "LyraError":
                    offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert offenders == []
