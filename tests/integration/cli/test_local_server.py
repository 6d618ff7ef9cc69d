"""`lyra neo4j ...` on the managed test instance the run uses (``test``, ``test2`` or any other name: the one
NEO4J_URI points at, as `make test` sets it), and on instances of any name in a throw-away state folder."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lyra.core.errors import Neo4jServerError
from lyra.core.settings import Settings, load_settings
from lyra.graph.server import KNOWN_PORTS, LocalNeo4j, instance_for_uri
from tests.support.helpers import run_lyra

pytestmark = pytest.mark.neo4j


def lyra(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_lyra(*args, env=env, without_neo4j_env=True)


@pytest.fixture
def managed(settings: Settings) -> LocalNeo4j:
    instance = instance_for_uri(settings.neo4j.neo4j_uri, settings.paths.state_dir)
    if instance is None or instance == "default":
        pytest.skip("the tests do not run against a managed test instance")
    return LocalNeo4j(load_settings(), instance)


def test_start_is_idempotent_and_reuses_the_running_server(managed: LocalNeo4j) -> None:
    pid = managed.pid()
    assert pid is not None
    result = lyra("neo4j", "start", "--instance", managed.instance)
    assert result.returncode == 0, result.stderr
    assert f"pid {pid}" in result.stdout
    assert managed.pid() == pid


def test_status_and_env_describe_the_instance(managed: LocalNeo4j, settings: Settings) -> None:
    status = lyra("neo4j", "status", "--instance", managed.instance)
    assert status.returncode == 0
    assert "running: True" in status.stdout
    assert f"browser_url: http://127.0.0.1:{managed.http_port}/browser/" in status.stdout
    # the ports in use are written once into the instance's folder (the start wrote them)
    assert json.loads(managed.ports_file.read_text(encoding="utf-8")) == {
        "bolt": managed.bolt_port,
        "http": managed.http_port,
    }
    env = lyra("neo4j", "env", "--instance", managed.instance)
    password = settings.neo4j.neo4j_password
    assert env.stdout.splitlines() == [
        f"export NEO4J_URI={settings.neo4j.neo4j_uri}",
        "export NEO4J_USERNAME=neo4j",
        f"export NEO4J_PASSWORD={password.get_secret_value() if password else ''}",
    ]


def test_generated_password_is_private_and_not_a_default(managed: LocalNeo4j) -> None:
    password = managed.password()
    assert len(password) >= 24
    assert password not in ("neo4j", "password")
    assert managed.password_file.stat().st_mode & 0o077 == 0


def test_start_refuses_a_port_taken_by_another_process(managed: LocalNeo4j, tmp_path: Path) -> None:
    # A second state folder whose instance of the same name would need the ports the running server already holds.
    other = LocalNeo4j(load_settings(state_dir=tmp_path), managed.instance)
    if managed.instance not in KNOWN_PORTS:  # a new name in a new folder gets free ports: ask for the taken ones
        chosen = {"neo4j_bolt_port": managed.bolt_port, "neo4j_http_port": managed.http_port}
        other = LocalNeo4j(load_settings(state_dir=tmp_path, **chosen), managed.instance)
    with pytest.raises(Neo4jServerError, match="already taken"):
        other.start()
    # so does a new name asked for those ports through the settings
    taken = {"LYRA_NEO4J_BOLT_PORT": str(managed.bolt_port), "LYRA_NEO4J_HTTP_PORT": str(managed.http_port)}
    result = lyra("neo4j", "start", "--instance", "wt-other", env={"LYRA_STATE_DIR": str(tmp_path), **taken})
    assert result.returncode != 0 and "already taken" in result.stderr


def test_any_name_is_an_instance_with_ports_of_its_own_kept_across_commands(tmp_path: Path) -> None:
    env = {"LYRA_STATE_DIR": str(tmp_path), "LYRA_NEO4J_BOLT_PORT": "", "LYRA_NEO4J_HTTP_PORT": ""}  # "": unset
    first = lyra("neo4j", "status", "--instance", "my-checkout_2", env=env)
    assert first.returncode == 1 and "running: False" in first.stdout
    ports = json.loads((tmp_path / "neo4j" / "my-checkout_2" / "ports.json").read_text(encoding="utf-8"))
    assert f"bolt_uri: bolt://127.0.0.1:{ports['bolt']}" in first.stdout
    assert f"browser_url: http://127.0.0.1:{ports['http']}/browser/" in first.stdout
    again = lyra("neo4j", "status", "--instance", "my-checkout_2", env=env)
    assert again.stdout == first.stdout
    unnamed = lyra("neo4j", "env", "--instance", "my-checkout_2", env=env)
    assert unnamed.returncode != 0 and "lyra neo4j start --instance my-checkout_2" in unnamed.stderr
    bad = lyra("neo4j", "status", "--instance", "Not/A-Name", env=env)
    assert bad.returncode != 0 and "neo4j_instance" in bad.stderr
    assert sorted(p.name for p in (tmp_path / "neo4j").iterdir()) == ["my-checkout_2"]


def test_env_without_a_started_instance_explains_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(Neo4jServerError, match="no password yet") as info:
        LocalNeo4j(load_settings(state_dir=tmp_path), "default").env_lines()
    assert info.value.hint is not None
    assert "lyra neo4j start" in info.value.hint
