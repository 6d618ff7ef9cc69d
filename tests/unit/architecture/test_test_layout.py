"""The test tree's own layout (CONTRIBUTING.md, "Where a test goes"), read with ``ast`` and the file system: unit
tests sit in ``tests/unit/<lyra package>/`` (or ``architecture/`` for checks across the package), integration tests
one folder down in ``tests/integration/``, every test file name is unique in the tree, and no test module imports
another: what two tests share lives in ``tests/support/``."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.support.lyra_source import PACKAGE

TESTS = Path(__file__).resolve().parents[2]
UNIT_FOLDERS = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()} | {"architecture"}


def python_files(root: Path = TESTS) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def files_of_tests(root: Path = TESTS) -> list[Path]:
    return [p for p in python_files(root) if p.name.startswith("test_")]


def dotted(path: Path, root: Path = TESTS) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path = TESTS) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in ``path``, relative ones resolved against its package."""
    package = dotted(path, root).split(".")[:-1] if path.name != "__init__.py" else dotted(path, root).split(".")
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.append((node.lineno, module))
            found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
    return found


def imports_of_test_modules(root: Path = TESTS) -> list[str]:
    """Every import, anywhere in the tree, of a test module (``test_*``) or of a conftest."""
    return [
        f"{path.relative_to(root.parent)}:{line} imports {module}"
        for path in python_files(root)
        for line, module in imported_modules(path, root)
        if is_test_module(module, root)
    ]


def is_test_module(module: str, root: Path = TESTS) -> bool:
    parts = module.split(".")
    inside = parts[0] == root.name and parts[-1].startswith(("test_", "conftest"))
    return inside or (len(parts) == 1 and parts[0].startswith("test_"))


def duplicate_names(root: Path = TESTS) -> dict[str, list[str]]:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in files_of_tests(root):
        by_name[path.name].append(str(path.relative_to(root)))
    return {name: paths for name, paths in by_name.items() if len(paths) > 1}


def misplaced(root: Path = TESTS) -> list[str]:
    """Test files outside ``unit/<lyra package or architecture>/`` and ``integration/<area>/``."""
    out = []
    for path in files_of_tests(root):
        parts = path.relative_to(root).parts
        if (
            len(parts) != 3
            or parts[0] not in {"unit", "integration"}
            or (parts[0] == "unit" and parts[1] not in UNIT_FOLDERS)
        ):
            out.append("/".join(parts))
    return out


def test_no_test_module_imports_another() -> None:
    assert imports_of_test_modules() == []


def test_every_test_file_name_is_unique_in_the_tree() -> None:
    assert duplicate_names() == {}


def test_every_test_file_sits_in_its_level_and_package() -> None:
    assert misplaced() == []


def test_every_folder_of_the_tree_is_a_package() -> None:
    folders = {p.parent for p in python_files()}
    assert sorted(str(f.relative_to(TESTS)) for f in folders if not (f / "__init__.py").exists()) == []


def test_the_checks_see_an_import_of_a_test_module_and_a_shared_name(tmp_path: Path) -> None:
    root = tmp_path / "tests"
    for folder in ("unit/core", "integration/web", "support", "unit/nowhere"):
        (root / folder).mkdir(parents=True)
    (root / "unit/core/test_a.py").write_text("from .test_b import X\nfrom tests.support.helpers import Y\n")
    (root / "unit/core/test_b.py").write_text("X = 1\n")
    (root / "integration/web/test_a.py").write_text("import tests.unit.core.test_b\n")
    (root / "support/helpers.py").write_text("from tests.integration.web.test_a import Z\nY = 2\n")
    (root / "unit/core/test_c.py").write_text("import test_b\n")
    (root / "unit/nowhere/test_d.py").write_text("")
    (root / "test_top.py").write_text("")
    assert imports_of_test_modules(root) == [
        "tests/integration/web/test_a.py:1 imports tests.unit.core.test_b",
        "tests/support/helpers.py:1 imports tests.integration.web.test_a",
        "tests/unit/core/test_a.py:1 imports tests.unit.core.test_b",
        "tests/unit/core/test_c.py:1 imports test_b",
    ]
    assert duplicate_names(root) == {"test_a.py": ["integration/web/test_a.py", "unit/core/test_a.py"]}
    assert misplaced(root) == ["test_top.py", "unit/nowhere/test_d.py"]
