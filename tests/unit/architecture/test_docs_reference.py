"""The documentation's reference pages are generated from the code (scripts/gen_reference.py); a committed page that
differs from what the code generates now fails here. Fix: `make reference` (or `python scripts/gen_reference.py`)
and commit docs/reference/."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

ROOT = Path(__file__).resolve().parents[3]


class _Web(BaseModel):
    """Web fetching."""

    timeout_seconds: float = Field(default=20.0, gt=0)  # the whole fetch of one URL
    user_agent: str = "Lyra/0.1"


class _Nested(BaseSettings):
    """Settings nested per concern, as the generator must also read them."""

    model_config = SettingsConfigDict(env_prefix="LYRA_", env_nested_delimiter="__")

    # --- logging
    log_level: str = "INFO"  # the level of stderr's log
    web: _Web = Field(default_factory=_Web)


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "scripts" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_reference", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return _generator().pages()  # type: ignore[no-any-return]


def test_the_committed_reference_pages_match_the_code(generated: dict[str, str]) -> None:
    stale = _generator().stale(generated)
    assert not stale, f"docs/reference/ is stale: {stale}; run `make reference` and commit the result"


def test_every_generated_page_is_in_the_site_navigation(generated: dict[str, str]) -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for name in generated:
        if name.endswith(".md"):
            assert f"reference/{name}" in nav, name


def test_the_pages_name_what_the_code_declares(generated: dict[str, str]) -> None:
    from lyra.core import errors
    from lyra.graph.catalog import CypherCatalog
    from lyra.models.catalogue import OPERATIONS

    for operation in OPERATIONS:
        if operation.mcp:
            assert f"## {operation.name}\n" in generated["mcp-tools.md"]
    for name in vars(errors).values():
        if isinstance(name, type) and issubclass(name, errors.LyraError):
            assert f"`{name.code}`" in generated["errors.md"]
    for query in CypherCatalog.load(ROOT / "cypher"):
        assert f"`{query.name}.cypher`" in generated["cypher.md"]
    assert "`LYRA_STATE_DIR`" in generated["settings.md"] and "`NEO4J_URI`" in generated["settings.md"]
    assert '"/api/v1/tasks"' in generated["openapi.json"]


def test_a_changed_page_is_reported_stale(tmp_path: Path, generated: dict[str, str]) -> None:
    module = _generator()
    for name, text in generated.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert module.stale(generated, tmp_path) == []
    (tmp_path / "errors.md").write_text(generated["errors.md"] + "edited by hand\n", encoding="utf-8")
    assert module.stale(generated, tmp_path) == ["errors.md"]


def test_nested_settings_are_listed_with_their_path_env_name_bounds_and_meaning() -> None:
    rows = list(_generator().setting_rows(_Nested, {"LYRA_WEB_USER_AGENT": "what robots.txt sees"}, "LYRA_"))
    assert [(r.path, r.env) for r in rows] == [
        ("log_level", ("LYRA_LOG_LEVEL",)),
        ("web.timeout_seconds", ("LYRA_WEB__TIMEOUT_SECONDS",)),
        ("web.user_agent", ("LYRA_WEB__USER_AGENT",)),
    ]
    level, timeout, agent = rows
    assert level.section == "logging" and level.meaning == "the level of stderr's log" and level.default == "`INFO`"
    assert timeout.type == "float (> 0)" and timeout.meaning == "the whole fetch of one URL"
    assert timeout.section.startswith("`web`: Web fetching")
    assert agent.meaning == "what robots.txt sees"  # a meaning kept under the flat name still applies
