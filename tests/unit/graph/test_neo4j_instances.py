"""Managed Neo4j instances are any name: the name rule, the ports (settings, fixed names, allocated once and
written into the instance's folder) and the URI -> instance mapping. A temporary state folder, no server started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from lyra.core.errors import Neo4jServerError
from lyra.core.settings import Settings, load_settings
from lyra.graph.server import (
    KNOWN_PORTS,
    LocalNeo4j,
    check_instance_name,
    instance_for_uri,
    instance_ports,
    managed_instances,
)


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name in ("LYRA_NEO4J_BOLT_PORT", "LYRA_NEO4J_HTTP_PORT", "LYRA_NEO4J_INSTANCE"):
        monkeypatch.delenv(name, raising=False)
    return load_settings(state_dir=tmp_path)


@pytest.mark.parametrize("name", ["default", "test", "test2", "scratch", "a", "my-checkout", "ci_7", "x" * 32])
def test_any_name_of_the_pattern_is_an_instance(name: str, settings: Settings) -> None:
    assert check_instance_name(name) == name
    assert settings.model_copy(update={"neo4j_instance": name}).neo4j.neo4j_instance == name
    assert load_settings(state_dir=settings.paths.state_dir, neo4j_instance=name).neo4j.neo4j_instance == name


@pytest.mark.parametrize("name", ["", "Test", "2nd", "-x", "_x", "a b", "a/b", "../up", "a.b", "x" * 33, "é"])
def test_other_names_are_refused_by_the_settings_and_the_server(name: str, settings: Settings) -> None:
    with pytest.raises(Neo4jServerError):
        check_instance_name(name)
    with pytest.raises(ValidationError):
        load_settings(state_dir=settings.paths.state_dir, neo4j_instance=name)
    with pytest.raises(Neo4jServerError):
        LocalNeo4j(settings, name)
    assert not (settings.paths.state_dir / "neo4j").exists()


def test_the_known_names_keep_their_ports_and_write_nothing(settings: Settings) -> None:
    assert KNOWN_PORTS["default"] == (7687, 7474) and KNOWN_PORTS["test2"] == (7689, 7476)
    for name, ports in KNOWN_PORTS.items():
        assert instance_ports(settings, name) == ports
        server = LocalNeo4j(settings, name)
        assert (server.bolt_port, server.http_port) == ports
        assert server.bolt_uri == f"bolt://127.0.0.1:{ports[0]}"
    assert not (settings.paths.state_dir / "neo4j").exists()


def test_an_unknown_name_gets_a_free_pair_once_and_keeps_it(settings: Settings) -> None:
    bolt, http = instance_ports(settings, "mine")
    path = settings.paths.state_dir / "neo4j" / "mine" / "ports.json"
    assert json.loads(path.read_text(encoding="utf-8")) == {"bolt": bolt, "http": http}
    assert bolt != http and not {bolt, http} & {p for pair in KNOWN_PORTS.values() for p in pair}
    # the same pair on every later call, from another process too (read from the file)
    assert instance_ports(settings, "mine") == (bolt, http)
    assert instance_ports(load_settings(state_dir=settings.paths.state_dir), "mine") == (bolt, http)
    server = LocalNeo4j(settings, "mine")
    assert (server.bolt_port, server.http_port) == (bolt, http) and server.ports_file == path
    # a second new name gets another pair
    other = instance_ports(settings, "other")
    assert not set(other) & {bolt, http}
    assert managed_instances(settings.paths.state_dir)["mine"] == (bolt, http)
    assert managed_instances(settings.paths.state_dir)["other"] == other


def test_ports_from_the_settings_win_and_are_taken_for_a_new_name(settings: Settings) -> None:
    chosen = settings.model_copy(update={"neo4j_bolt_port": 17001, "neo4j_http_port": 17002})
    assert instance_ports(chosen, "mine") == (17001, 17002)
    # given for a new name: nothing allocated (the start writes them into ports.json)
    assert not (settings.paths.state_dir / "neo4j" / "mine").exists()
    assert instance_ports(chosen, "test") == (17001, 17002)
    assert instance_ports(settings.model_copy(update={"neo4j_http_port": 17003}), "test") == (7688, 17003)
    with pytest.raises(ValidationError):
        load_settings(state_dir=settings.paths.state_dir, neo4j_bolt_port=0)


def test_a_written_ports_file_wins_over_the_fixed_ports(settings: Settings) -> None:
    path = settings.paths.state_dir / "neo4j" / "test3" / "ports.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"bolt": 17011, "http": 17012}), encoding="utf-8")
    assert instance_ports(settings, "test3") == (17011, 17012)
    path.write_text("not json", encoding="utf-8")  # an unreadable file: the fixed ports again
    assert instance_ports(settings, "test3") == KNOWN_PORTS["test3"]


def test_instance_for_uri_reads_the_fixed_ports_and_the_ports_files(settings: Settings) -> None:
    state = settings.paths.state_dir
    assert instance_for_uri("bolt://127.0.0.1:7689", state) == "test2"
    assert instance_for_uri("neo4j://localhost:7687", state) == "default"
    bolt, _ = instance_ports(settings, "mine")
    assert instance_for_uri(f"bolt://127.0.0.1:{bolt}", state) == "mine"
    assert instance_for_uri(f"bolt://db.example.org:{bolt}", state) is None
    assert instance_for_uri("bolt+s://127.0.0.1:7687", state) is None
    assert instance_for_uri("bolt://127.0.0.1:1", state) is None
    assert instance_for_uri(None, state) is None
