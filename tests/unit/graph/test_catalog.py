"""The Cypher catalog on disk: every file declares its mode, holds one statement, uses only $params."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lyra.core.errors import ConfigError
from lyra.core.settings import load_settings
from lyra.graph.catalog import CypherCatalog


@pytest.fixture(scope="module")
def catalog() -> CypherCatalog:
    return CypherCatalog.load(load_settings().paths.cypher_dir)


def test_catalog_loads_every_file_under_cypher(catalog: CypherCatalog) -> None:
    files = sorted(load_settings().paths.cypher_dir.rglob("*.cypher"))
    assert len(catalog.names()) == len(files) > 20


def test_schema_files_are_idempotent_ddl(catalog: CypherCatalog) -> None:
    for name in catalog.names("schema/"):
        q = catalog[name]
        assert q.mode == "schema"
        assert "IF NOT EXISTS" in q.text, name


def test_no_statement_splices_values_into_text(catalog: CypherCatalog) -> None:
    # Values come only as $params: no Python format fields and no string literals built from input.
    for q in catalog:
        assert not re.search(r"\{[a-z_]+\}", q.text.replace("{}", "")), q.name
        assert "%s" not in q.text and "f'" not in q.text, q.name


def test_batched_cleanups_run_in_auto_commit(catalog: CypherCatalog) -> None:
    for q in catalog:
        assert ("IN TRANSACTIONS" in q.text) == q.auto_commit, q.name


def test_file_without_mode_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "bad.cypher").write_text("MATCH (n) RETURN n")
    with pytest.raises(ConfigError, match="mode"):
        CypherCatalog.load(tmp_path)


def test_two_statements_in_one_file_are_refused(tmp_path: Path) -> None:
    (tmp_path / "two.cypher").write_text("// mode: read\nMATCH (n) RETURN n; MATCH (m) RETURN m")
    with pytest.raises(ConfigError, match="one statement"):
        CypherCatalog.load(tmp_path)


def test_unknown_name_is_a_clear_error(catalog: CypherCatalog) -> None:
    with pytest.raises(ConfigError, match="no Cypher statement named"):
        catalog["nope/nothing"]
