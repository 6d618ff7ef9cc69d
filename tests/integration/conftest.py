"""The integration tests' fixtures: the Neo4j under test and Services over it.

Which Neo4j the integration tests use, in order:
1. ``NEO4J_URI`` (+ ``NEO4J_USERNAME``/``NEO4J_PASSWORD``) when set — `make test` and `.ci/run` point it at the
   managed *test* instance (bolt 7688), never at the demo's data.
2. a throw-away ``neo4j:5.26.5-community`` container via testcontainers, when a Docker engine answers;
3. otherwise the integration tests are skipped locally, and fail when ``LYRA_REQUIRE_NEO4J=1`` (CI).

Wipe guard: tests empty the database between tests. They refuse to touch a database that holds data
unless it carries Lyra's test marker or ``LYRA_TEST_ALLOW_WIPE=1`` is set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from lyra.bootstrap import Services, build_services
from lyra.core.settings import Settings, load_settings
from lyra.graph.connection import bind_neomodel


@dataclass(frozen=True)
class Neo4jTarget:
    uri: str
    username: str
    password: str
    http_url: str | None


def _docker_engine_answers() -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    try:
        return subprocess.run([docker, "info"], capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _unavailable(reason: str) -> None:
    if os.environ.get("LYRA_REQUIRE_NEO4J") == "1":
        pytest.fail(f"LYRA_REQUIRE_NEO4J=1 but no Neo4j is available: {reason}", pytrace=False)
    pytest.skip(f"no Neo4j available: {reason}")


@pytest.fixture(scope="session")
def neo4j_target() -> Iterator[Neo4jTarget]:
    uri = os.environ.get("NEO4J_URI")
    if uri:
        password = os.environ.get("NEO4J_PASSWORD")
        if not password:
            _unavailable("NEO4J_URI is set but NEO4J_PASSWORD is not")
        yield Neo4jTarget(
            uri,
            os.environ.get("NEO4J_USERNAME", "neo4j"),
            str(password),
            os.environ.get("LYRA_NEO4J_HTTP_URL"),
        )
        return
    if _docker_engine_answers():
        try:
            from testcontainers.community.neo4j import Neo4jContainer  # the dev extra pins testcontainers 4.15
        except ImportError:
            _unavailable("a Docker engine answers but testcontainers is not installed")
        password = "lyra-test-password"
        container = Neo4jContainer("neo4j:5.26.5-community", password=password).with_env("NEO4J_PLUGINS", '["apoc"]')
        with container:
            http = f"http://{container.get_container_host_ip()}:{container.get_exposed_port(7474)}"
            yield Neo4jTarget(container.get_connection_url(), "neo4j", password, http)
        return
    _unavailable("NEO4J_URI is not set and no Docker engine answers (run `make test`)")


@pytest.fixture(scope="session")
def settings(neo4j_target: Neo4jTarget) -> Settings:
    return load_settings(
        neo4j_uri=neo4j_target.uri,
        neo4j_username=neo4j_target.username,
        neo4j_password=neo4j_target.password,
        write_batch_size=500,
        cleanup_batch_size=200,
    )


@pytest.fixture(scope="session")
def services(settings: Settings) -> Iterator[Services]:
    svc = build_services(settings, apply_schema=False)
    summary = svc.store.run("admin/database_summary")[0]
    if summary["nodes"] and not summary["test_markers"] and os.environ.get("LYRA_TEST_ALLOW_WIPE") != "1":
        svc.close()
        pytest.exit(
            f"refusing to run: the database at {settings.neo4j.neo4j_uri} holds {summary['nodes']} nodes and is not "
            "a Lyra test database. Point NEO4J_URI at an empty database (`make test` uses the managed "
            "test instance) or set LYRA_TEST_ALLOW_WIPE=1 to wipe it.",
            returncode=3,
        )
    svc.store.apply_schema()
    yield svc
    svc.close()


@pytest.fixture
def graph(services: Services) -> Services:
    """Services over an emptied (test-marked) database."""
    # neomodel's connection is process-wide: another Services object (closed since) may have taken it
    bind_neomodel(services.store.driver, services.settings)
    services.store.run("admin/wipe_all_data", {"batch_size": 10_000})
    services.store.run("admin/mark_test_database")
    return services
