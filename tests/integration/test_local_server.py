"""`lyra neo4j ...` on the managed test instance (only when the tests run against it, as `make test` does)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lyra.core.errors import Neo4jServerError
from lyra.core.settings import Settings, load_settings
from lyra.graph.server import LocalNeo4j

from .helpers import run_lyra

pytestmark = pytest.mark.neo4j
MANAGED_TEST_URI = "bolt://127.0.0.1:7688"


def lyra(*args: str) -> subprocess.CompletedProcess[str]:
    return run_lyra(*args, without_neo4j_env=True)


@pytest.fixture
def managed(settings: Settings) -> LocalNeo4j:
    if settings.neo4j_uri != MANAGED_TEST_URI:
        pytest.skip("the tests do not run against the managed test instance")
    return LocalNeo4j(load_settings(), "test")


def test_start_is_idempotent_and_reuses_the_running_server(managed: LocalNeo4j) -> None:
    pid = managed.pid()
    assert pid is not None
    result = lyra("neo4j", "start", "--instance", "test")
    assert result.returncode == 0, result.stderr
    assert f"pid {pid}" in result.stdout
    assert managed.pid() == pid


def test_status_and_env_describe_the_instance(managed: LocalNeo4j, settings: Settings) -> None:
    status = lyra("neo4j", "status", "--instance", "test")
    assert status.returncode == 0
    assert "running: True" in status.stdout
    env = lyra("neo4j", "env", "--instance", "test")
    assert env.stdout.splitlines() == [
        f"export NEO4J_URI={MANAGED_TEST_URI}",
        "export NEO4J_USERNAME=neo4j",
        f"export NEO4J_PASSWORD={settings.neo4j_password.get_secret_value() if settings.neo4j_password else ''}",
    ]


def test_generated_password_is_private_and_not_a_default(managed: LocalNeo4j) -> None:
    password = managed.password()
    assert len(password) >= 24
    assert password not in ("neo4j", "password")
    assert managed.password_file.stat().st_mode & 0o077 == 0


def test_start_refuses_a_port_taken_by_another_process(managed: LocalNeo4j, tmp_path: Path) -> None:
    # A second state folder whose "test" instance would need the ports the running server already holds.
    other = LocalNeo4j(load_settings(state_dir=tmp_path), "test")
    with pytest.raises(Neo4jServerError, match="already taken"):
        other.start()


def test_env_without_a_started_instance_explains_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(Neo4jServerError, match="no password yet") as info:
        LocalNeo4j(load_settings(state_dir=tmp_path), "default").env_lines()
    assert info.value.hint is not None
    assert "lyra neo4j start" in info.value.hint
