"""No import cycle inside ``lyra``, read from the source with ``ast``: the graph of module-level imports (an import
inside a function or under ``if TYPE_CHECKING:`` runs later or never, so it does not count) has no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.lyra_source import PACKAGE, module_name


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported: its body's, and those of its ``if``/``try``/
    ``with`` blocks, not those in functions, classes' methods or ``if TYPE_CHECKING:``."""
    out: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            out.append(node)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                out.extend(_top_level_imports(node.body))
            out.extend(_top_level_imports(node.orelse))
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                out.extend(_top_level_imports(block))
        elif isinstance(node, ast.With | ast.ClassDef):
            out.extend(_top_level_imports(node.body))
    return out


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the ``lyra`` modules it imports at module level (``from pkg import name`` counts as importing
    ``pkg.name`` when that is a module, else ``pkg``)."""
    modules = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in _top_level_imports(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                full = f"{target}.{alias.name}"
                targets.add(full if full in modules else target)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as a cycle through them."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(_cycle_through(sorted(component), graph))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _cycle_through(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One cycle within a strongly connected component, from its first module back to it (breadth first)."""
    members = set(component)
    start = component[0]
    paths = {nxt: [start, nxt] for nxt in sorted(graph[start] & members)}
    queue = list(paths)
    while queue:
        node = queue.pop(0)
        if start in graph[node]:
            return [*paths[node], start]
        for nxt in sorted(graph[node] & members):
            if nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                queue.append(nxt)
    return [*component, start]


def test_no_import_cycle_inside_lyra() -> None:
    found = [" -> ".join(cycle) for cycle in cycles(import_graph())]
    assert found == [], "module-level import cycles:\n" + "\n".join(found)


def test_the_check_names_a_cycle_and_ignores_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    fake = tmp_path / "lyra"
    (fake / "sources").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "sources" / "__init__.py").write_text("")
    (fake / "sources" / "a.py").write_text("from lyra.sources.b import B\nA = 1\n")
    (fake / "sources" / "b.py").write_text("from lyra.sources import a\nB = 1\n")
    (fake / "sources" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lyra.sources.d import D\n"
        "def f():\n    from lyra.sources.d import D\n"
    )
    (fake / "sources" / "d.py").write_text("from .c import f\n")
    graph = import_graph(fake)
    assert graph["lyra.sources.c"] == set()
    assert graph["lyra.sources.d"] == {"lyra.sources.c"}
    assert cycles(graph) == [["lyra.sources.a", "lyra.sources.b", "lyra.sources.a"]]
