"""The dependency rule, read from the source with ``ast`` (every import counts: module level, inside functions,
under ``if TYPE_CHECKING:``):

    cli ─┬─> bench (``lyra bench``: measures the user's own install; only ``lyra.cli.bench`` imports it)
         └─> bootstrap (composition root: the only module that builds the adapters)
               ├─> api, mcp (adapters: Operations + models + core only)
    bench ──> bootstrap, services (the application layer) ──> graph, ml, sources ──> models, core

    testing (test doubles shipped for users' tests and the demo) ──> sources, models, core

Nothing imports an adapter except the composition root, and nothing below ``services`` imports ``services``.
``lyra.testing`` stays off the product's real paths: only the demo (``lyra.services.demo``) and the benchmarks
(``lyra.bench``) import it. Nothing in the package imports the checkout's ``benchmarks/`` (comparisons with other
systems: tooling beside the product).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.lyra_source import PACKAGE, module_name

LAYER_OF_COMPONENT = {
    "core": "base",
    "models": "base",
    "__init__": "base",
    "graph": "lower",
    "ml": "lower",
    "sources": "lower",
    "services": "application",
    "api": "adapter",
    "mcp": "adapter",
    "bench": "tool",
    "testing": "testing",
    "cli": "entry",
    "__main__": "entry",
    "bootstrap": "root",
}
# component layer -> the layers it may import
ALLOWED_LAYERS = {
    "base": {"base"},
    "lower": {"lower", "base"},
    "application": {"application", "lower", "base"},
    "adapter": {"base"},  # plus lyra.services.operations, see ADAPTER_MAY_IMPORT
    "tool": {"root", "application", "lower", "base", "tool", "testing"},
    "testing": {"testing", "base"},  # plus lyra.sources, see TESTING_MAY_IMPORT
    "entry": {"entry", "root", "tool", "application", "base"},
    "root": {"root", "adapter", "application", "lower", "base"},
}
ADAPTER_MAY_IMPORT = {"lyra.services.operations"}
# the test doubles speak the real clients' vocabulary (lyra.sources), nothing else below them
TESTING_MAY_IMPORT = {"sources"}
# the only product modules (or packages, with everything under them) that may import lyra.testing
TESTING_IMPORTED_BY = ("lyra.services.demo", "lyra.bench", "lyra.testing")
# the only modules outside lyra.bench that may import it: the `lyra bench` command group
BENCH_IMPORTED_BY = ("lyra.cli.bench",)


def component(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports_of(path: Path, root: Path = PACKAGE) -> Iterator[tuple[int, str]]:
    """(line, imported lyra module) for every import statement in the file, wherever it stands."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    own = module_name(path, root)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in {"lyra", "benchmarks"}:
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] == "benchmarks":
                yield node.lineno, target
                continue
            if target.split(".")[0] != "lyra":
                continue
            yield node.lineno, target
            for alias in node.names:  # `from lyra.core import errors` imports the module lyra.core.errors
                candidate = root.parent / Path(*f"{target}.{alias.name}".split("."))
                if candidate.with_suffix(".py").exists() or (candidate / "__init__.py").exists():
                    yield node.lineno, f"{target}.{alias.name}"


def allowed(source: str, target: str) -> bool:
    src_layer, dst_layer = LAYER_OF_COMPONENT[component(source)], LAYER_OF_COMPONENT[component(target)]
    if dst_layer == "tool" and src_layer != "tool":
        return source in BENCH_IMPORTED_BY
    if dst_layer == "testing":
        return any(source == m or source.startswith(f"{m}.") for m in TESTING_IMPORTED_BY)
    if src_layer == "testing" and component(target) in TESTING_MAY_IMPORT:
        return True
    if src_layer == "adapter" and (target in ADAPTER_MAY_IMPORT or component(target) == component(source)):
        return True
    return dst_layer in ALLOWED_LAYERS[src_layer]


def violations(root: Path = PACKAGE) -> list[str]:
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        source = module_name(path, root)
        src_layer = LAYER_OF_COMPONENT[component(source)]
        for line, target in imports_of(path, root):
            if target.split(".")[0] == "benchmarks":
                found.append(f"{path.relative_to(root.parent)}:{line}: {source} imports the checkout's {target}")
                continue
            dst_layer = LAYER_OF_COMPONENT[component(target)]
            if not allowed(source, target):
                where = f"{path.relative_to(root.parent)}:{line}"
                found.append(f"{where}: {source} ({src_layer}) imports {target} ({dst_layer})")
    return found


def test_every_package_component_has_a_layer() -> None:
    components = {component(module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert components <= set(LAYER_OF_COMPONENT), components - set(LAYER_OF_COMPONENT)


def test_no_import_breaks_the_dependency_rule() -> None:
    assert violations() == []


def test_the_rule_catches_an_adapter_import_hidden_under_type_checking(tmp_path: Path) -> None:
    fake = tmp_path / "lyra"
    (fake / "services").mkdir(parents=True)
    (fake / "mcp").mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "services" / "__init__.py").write_text("")
    (fake / "mcp" / "__init__.py").write_text("")
    (fake / "mcp" / "server.py").write_text("X = 1\n")
    (fake / "services" / "x.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lyra.mcp.server import X\n"
    )
    assert violations(fake) == ["lyra/services/x.py:3: lyra.services.x (application) imports lyra.mcp.server (adapter)"]


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("lyra.api.app", "lyra.mcp.server"),
        ("lyra.api.app", "lyra.bootstrap"),
        ("lyra.api.app", "lyra.graph.store"),
        ("lyra.services.ingest", "lyra.api.app"),
        ("lyra.graph.store", "lyra.services.operations"),
        ("lyra.models.api", "lyra.graph.store"),
        ("lyra.cli.common", "lyra.graph.server"),
        ("lyra.services.research", "lyra.testing.scholarly"),
        ("lyra.sources.scholarly.provider", "lyra.testing.scholarly"),
        ("lyra.cli.server", "lyra.testing.scholarly"),
        ("lyra.bootstrap", "lyra.testing.scholarly"),
        ("lyra.testing.scholarly", "lyra.graph.store"),
        ("lyra.testing.scholarly", "lyra.services.ingest"),
        ("lyra.cli.server", "lyra.bench.api"),
        ("lyra.services.ingest", "lyra.bench.timing"),
        ("lyra.bootstrap", "lyra.bench.api"),
    ],
)
def test_forbidden_edges_are_forbidden(source: str, target: str) -> None:
    assert not allowed(source, target)


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("lyra.api.app", "lyra.services.operations"),
        ("lyra.mcp.server", "lyra.models.api"),
        ("lyra.bootstrap", "lyra.mcp.server"),
        ("lyra.cli.server", "lyra.bootstrap"),
        ("lyra.services.research", "lyra.services.ingest"),
        ("lyra.ml.nli", "lyra.sources.injection"),
        ("lyra.services.demo", "lyra.testing.scholarly"),
        ("lyra.bench.citations", "lyra.testing.scholarly"),
        ("lyra.testing.scholarly", "lyra.sources.scholarly.papers"),
        ("lyra.testing.scholarly", "lyra.models.api"),
        ("lyra.cli.bench", "lyra.bench.api"),
        ("lyra.bench.api", "lyra.bootstrap"),
        ("lyra.bench.citations", "lyra.bench.timing"),
    ],
)
def test_the_intended_edges_are_allowed(source: str, target: str) -> None:
    assert allowed(source, target)


def test_the_package_never_imports_the_checkouts_benchmarks(tmp_path: Path) -> None:
    fake = tmp_path / "lyra"
    (fake / "services").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "services" / "__init__.py").write_text("")
    (fake / "services" / "x.py").write_text("def f() -> None:\n    from benchmarks.scale import main\n")
    assert violations(fake) == ["lyra/services/x.py:2: lyra.services.x imports the checkout's benchmarks.scale"]
