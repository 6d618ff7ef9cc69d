"""Which Neo4j to talk to: NEO4J_URI when set, else the managed local instance."""

from __future__ import annotations

from dataclasses import dataclass

import neo4j
from neomodel import db as neomodel_db
from neomodel import get_config as neomodel_config

from lyra.core.errors import ConfigError, GraphUnavailableError
from lyra.core.settings import Settings
from lyra.graph.server import NEO4J_USERNAME, LocalNeo4j
from lyra.graph.store import open_driver


@dataclass(frozen=True)
class ConnectionInfo:
    uri: str
    username: str
    managed: bool
    browser_url: str | None


def resolve_connection(settings: Settings) -> tuple[ConnectionInfo, str]:
    """Return where to connect and the password to use."""
    if settings.neo4j_uri:
        if settings.neo4j_password is None:
            raise ConfigError("NEO4J_URI is set but NEO4J_PASSWORD is not")
        browser = None
        host = settings.neo4j_uri.split("://", 1)[1].split(":", 1)[0].split("/", 1)[0]
        if host in ("127.0.0.1", "localhost"):
            browser = f"http://{host}:7474/browser/"
        info = ConnectionInfo(settings.neo4j_uri, settings.neo4j_username, False, browser)
        return info, settings.neo4j_password.get_secret_value()
    local = LocalNeo4j(settings)
    if local.pid() is None:
        raise GraphUnavailableError(
            f"the managed Neo4j instance {local.instance!r} is not running and NEO4J_URI is not set",
            hint="run `lyra neo4j start`, or set NEO4J_URI/NEO4J_USERNAME/NEO4J_PASSWORD",
        )
    return ConnectionInfo(local.bolt_uri, NEO4J_USERNAME, True, local.browser_url), local.password()


def connect(settings: Settings) -> tuple[neo4j.Driver, ConnectionInfo]:
    info, password = resolve_connection(settings)
    driver = open_driver(info.uri, info.username, password)
    try:
        bind_neomodel(driver, settings.neo4j_database)
    except BaseException:
        driver.close()
        raise
    return driver, info


def bind_neomodel(driver: neo4j.Driver, database: str) -> None:
    """Point neomodel's process-wide connection at ``driver`` (it shares it and never closes it)."""
    neomodel_config().database_name = database
    neomodel_db.set_connection(driver=driver)
