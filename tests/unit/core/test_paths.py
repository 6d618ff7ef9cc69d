"""Where the run-time files are found: a checkout's own cypher/ and config/, else the wheel's lyra/_resources
(tests/integration/packaging/test_wheel.py runs the installed wheel); paths that live in a folder follow it when it
moves."""

from __future__ import annotations

from pathlib import Path

import pytest

from lyra.core import paths
from lyra.core.settings import load_settings

ROOT = Path(__file__).resolve().parents[3]


def test_a_checkout_reads_its_own_folders_and_keeps_its_state_beside_them() -> None:
    assert paths.checkout_root() == ROOT
    settings = load_settings()
    assert paths.default_cypher_dir() == ROOT / "cypher" and paths.default_config_dir() == ROOT / "config"
    assert paths.default_state_dir() == ROOT / ".lyra"
    assert settings.models.stance_model_dir == ROOT / "config" / "stance"
    assert settings.models.stance_combiner == ROOT / "config" / "stance_combiner.json"
    assert settings.learning.learning_regression_set == ROOT / "config" / "learning" / "regression_pairs.jsonl"


def test_the_domain_policy_and_the_examples_follow_the_config_folder_unless_set(tmp_path: Path) -> None:
    moved = load_settings(config_dir=tmp_path)
    assert moved.paths.domains_file == tmp_path / "domains.yaml"
    assert moved.paths.examples_dir == tmp_path / "examples"
    assert moved.paths.allowed_roots == [tmp_path / "examples"]
    assert moved.paths.prompts_dir == tmp_path / "prompts"
    own = load_settings(config_dir=tmp_path, domains_file=tmp_path / "policy.yaml", examples_dir=tmp_path / "corpus")
    assert (own.paths.domains_file, own.paths.examples_dir, own.paths.allowed_roots) == (
        tmp_path / "policy.yaml",
        tmp_path / "corpus",
        [tmp_path / "corpus"],
    )
    roots = load_settings(examples_dir=tmp_path / "corpus", allowed_roots=str(tmp_path / "a"))
    assert roots.paths.allowed_roots == [tmp_path / "a"]


def test_outside_a_checkout_the_packaged_resources_are_read_and_their_absence_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(paths, "PACKAGE_DIR", tmp_path / "site-packages" / "lyra")
    assert paths.checkout_root() is None
    assert paths.default_state_dir() == Path.home() / ".lyra"
    # this source tree has no lyra/_resources (only a built wheel does): the error says what to do
    with pytest.raises(RuntimeError, match=r"packaged resources are missing.*LYRA_CYPHER_DIR"):
        paths.resource_root()
