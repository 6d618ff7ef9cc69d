"""build_services(settings): the one place where concrete classes are chosen and wired."""

from __future__ import annotations

from dataclasses import dataclass

from lyra.core.settings import Settings
from lyra.graph.catalog import CypherCatalog
from lyra.graph.connection import ConnectionInfo, connect
from lyra.graph.evidence import EvidenceRepository
from lyra.graph.store import GraphStore
from lyra.graph.tasks import TaskRepository
from lyra.services.cleanup import CleanupService
from lyra.services.materials import MaterialsService
from lyra.services.tasks import TaskService


@dataclass
class Services:
    settings: Settings
    connection: ConnectionInfo
    store: GraphStore
    evidence: EvidenceRepository
    tasks: TaskService
    materials: MaterialsService
    cleanup: CleanupService

    def close(self) -> None:
        self.store.close()


def build_services(settings: Settings, *, apply_schema: bool = True) -> Services:
    catalog = CypherCatalog.load(settings.cypher_dir)
    driver, info = connect(settings)
    store = GraphStore(driver, catalog, settings)
    if apply_schema:
        store.apply_schema()
    task_repo = TaskRepository(store)
    evidence = EvidenceRepository(store, settings.write_batch_size)
    return Services(
        settings=settings,
        connection=info,
        store=store,
        evidence=evidence,
        tasks=TaskService(task_repo, evidence),
        materials=MaterialsService(store, task_repo),
        cleanup=CleanupService(store, task_repo, settings.cleanup_batch_size),
    )
