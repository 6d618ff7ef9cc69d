"""A folder queued as a job target is read only inside the allowed folders (real Neo4j, real job machinery).

Before the fix, queuing ``{"kind": "file", "value": "/tmp/r"}`` with ``/tmp/r/l.md -> /tmp/o/s.md`` stored the
outside file as a Page with Fragments: the target was checked, the walk below it was not. The models are replaced
by a small deterministic embedder (no claim is judged here): this test is about which files reach the graph.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from lyra.bootstrap import Services
from lyra.ml.protocols import FloatArray, NLIResult
from lyra.ml.ranking import CandidateRanker
from lyra.ml.vector_index import FragmentIndex
from lyra.models.api import QueueTargetsRequest, Target
from lyra.services.ingest import IngestService
from lyra.services.jobs import ClaimedJob, JobContext, JobService
from lyra.services.research import ResearchExecutor

pytestmark = pytest.mark.neo4j
TASK = "confined_task"
DIMENSION = 16


class HashEmbedder:
    """Unit vectors derived from a text's hash: equal texts embed equally, different ones (almost surely) not."""

    model_id = "test:hash"
    dimension = DIMENSION

    def embed(self, texts: Sequence[str]) -> FloatArray:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:DIMENSION], dtype=np.uint8) for t in texts]
        vectors = np.asarray(rows, dtype=np.float32) - 127.5
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


class NoJudge:
    model_id = "test:none"

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        raise AssertionError("no claim is judged in these tests")


def ingest_service(graph: Services) -> IngestService:
    settings = graph.settings.model_copy(update={"ingest_max_file_bytes": 2000})
    return IngestService(
        settings=settings.pipeline,
        prompts_dir=settings.paths.prompts_dir,
        pdf_max_pages=settings.web.web_pdf_max_pages,
        store=graph.store,
        evidence=graph.evidence,
        tasks=graph.tasks,
        embedder=HashEmbedder(),
        judge=NoJudge(),
        index=FragmentIndex(DIMENSION, None, kind="flat"),
        domains=graph.domains.policy,
        ranker=CandidateRanker(),
        gate=graph.domains,
    )


def test_a_folder_job_reads_nothing_outside_the_allowed_folders(graph: Services, tmp_path: Path) -> None:
    root, outside = tmp_path / "r", tmp_path / "o"
    root.mkdir()
    outside.mkdir()
    secret = outside / "s.md"
    secret.write_text("# Secret\n\nA secret paragraph that sits outside the allowed folder and must stay there.\n")
    (root / "kept.md").write_text("# Kept\n\nA paragraph inside the allowed folder, long enough to be a fragment.\n")
    (root / "l.md").symlink_to(secret)
    (root / "outside_folder").symlink_to(outside, target_is_directory=True)
    (root / "hostname.txt").symlink_to("/etc/hostname")
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "big.md").write_text("# Big\n\n" + "word " * 1000)
    os.mkfifo(root / "pipe.md")

    graph.tasks.create_task(TASK, "Folder jobs stay inside the allowed folders", hypothesis_as_claim=False)
    queued = JobService(graph.store, graph.task_repo, [root]).queue(
        QueueTargetsRequest(task_id=TASK, targets=[Target(kind="file", value=str(root))])
    )
    (target,) = queued.jobs
    job = ClaimedJob(target.job_id, TASK, "file", target.value, options={}, attempts=1, claim="c")
    outcome = ResearchExecutor(graph.store, lambda: ingest_service(graph), [root])(job, JobContext(job))

    pages, _, _ = graph.store.driver.execute_query(
        "MATCH (p:Page) RETURN p.url AS url ORDER BY url", database_=graph.store.database
    )
    fragments, _, _ = graph.store.driver.execute_query(
        "MATCH (f:Fragment) RETURN f.text AS text", database_=graph.store.database
    )
    assert [r["url"] for r in pages] == [(root / "kept.md").as_uri()]
    assert not any("secret" in r["text"].lower() for r in fragments)
    skipped = {Path(s["item"]).name: s["reason"] for s in outcome.result["skipped"]}  # type: ignore[attr-defined]
    assert skipped == {
        "big.md": "larger than 2000 bytes (LYRA_INGEST_MAX_FILE_BYTES); not read",
        "hostname.txt": "a symbolic link leading outside the allowed folders (LYRA_ALLOWED_ROOTS)",
        "l.md": "a symbolic link leading outside the allowed folders (LYRA_ALLOWED_ROOTS)",
        "loop": "folder already walked (a symbolic link loop or a second link to it)",
        "outside_folder": "a symbolic link leading outside the allowed folders (LYRA_ALLOWED_ROOTS)",
        "pipe.md": "not a regular file (a device, FIFO or socket is never read)",
    }
    assert outcome.pages == 1
