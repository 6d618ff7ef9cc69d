"""`kill -9` of Neo4j while a job writes pages, and while it writes stance edges; `kill -9` of `lyra serve` while
it writes edges. Each disturbed run ingests the same documents for the same task and claim as an undisturbed
reference run (the first thing this module does) and must end with the same graph: the same nodes and
relationships per label and type, the same pages, fragments (with their pages) and edges (fragment, claim,
relation, judge's label and confidence), no duplicate page, fragment, EXTRACTED_FROM link, claim, domain, job or
stance edge, and the job ``done`` on its second attempt (the interrupted one resumed once; the limit is 3).

The kill lands inside the write: ``paused_serve.py`` runs the real `lyra serve` and pauses the job's first run of
the chosen statement after its writes are made and before its transaction commits; the test kills the process
with SIGKILL, restarts it (Neo4j) or starts another server (`lyra serve`), and waits for the job.

The stance judge is not deterministic across runs: llama.cpp answers at temperature 0 with a fixed seed, but each
pair's prompt carries fresh random delimiters (``Fence``), so the probabilities move by a few hundredths from one
call to the next (one pair judged three times: P(entailment) 0.563, 0.537, 0.516) and a pair near a boundary can
change label (1 of 14 edges did, in two runs with separate caches). So every run here shares one NLI cache, the
product's own (judgments are kept per model, premise and hypothesis and never asked again): the reference judges
with the LLM, the disturbed runs read its answers, and their edges are compared in full, confidence included.
Each run has its own FAISS index (an index of another run's wiped fragments would turn new passages into links to
fragments that no longer exist).

Only a managed Neo4j instance that this checkout runs and that the test suite uses is ever killed (``NEO4J_URI``
names its bolt port, its password file matches, ``LYRA_TEST_INSTANCE`` agrees when set, never the demo's
``default``); against any other server the two Neo4j tests skip and the `lyra serve` one still runs. The instance
is restarted with `lyra neo4j start` after each kill, and again if it is down when a test or the module ends.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from lyra.bootstrap import Services
from lyra.core.errors import LyraError
from lyra.core.settings import Settings
from lyra.graph.connection import bind_neomodel
from lyra.graph.server import LocalNeo4j, managed_instances
from lyra.models.api import QueueTargetsRequest, Target
from lyra.services.jobs import JobService
from tests.support.helpers import ROOT, SUPPORT_DIR, neo4j_env, run_lyra

pytestmark = [pytest.mark.neo4j, pytest.mark.models]
CORPUS = ROOT / "config" / "examples" / "corpus"
DOCUMENTS = ("microplastics_northgate_study.md", "microplastics_news.html", "microplastics_mixed_review.md")
TASK = "kill_task"
HYPOTHESIS = "Microplastic particles are present in bottled drinking water at higher concentrations than in tap water."
PAUSED_SERVE = SUPPORT_DIR / "paused_serve.py"
MAX_ATTEMPTS = 3
JOB_SECONDS = 600.0  # a whole job with cold models on a busy 2-core machine, with room to spare
NEO4J_SECONDS = 240.0  # a restart of the managed instance (it answers in about 30 s here)


# ----------------------------------------------------------------------------- the instance this test may kill
@dataclass(frozen=True)
class Killable:
    server: LocalNeo4j

    @property
    def instance(self) -> str:
        return self.server.instance

    def kill(self) -> None:
        pid = self.server.pid()
        assert pid is not None, f"Neo4j instance {self.instance!r} is not running"
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while self.server.pid() is not None:  # gone, or a zombie whose command line is empty
            assert time.monotonic() < deadline, f"Neo4j (pid {pid}) still runs after SIGKILL"
            time.sleep(0.1)

    def start(self) -> None:
        proc = run_lyra("neo4j", "start", "--instance", self.instance, timeout=NEO4J_SECONDS)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    def ensure_running(self, services: Services) -> None:
        """Start the instance if a test stopped between a kill and the restart; reconnect the test's driver."""
        if not self.server.status().running:
            self.start()
        reconnect(services)


def managed_instance(settings: Settings) -> LocalNeo4j | str:
    """The managed instance NEO4J_URI points at, or why there is none this test may kill."""
    uri = urlparse(str(settings.neo4j.neo4j_uri))
    names = [
        name
        for name, (bolt, _) in managed_instances(settings.paths.state_dir).items()
        if bolt == uri.port and name != "default"
    ]
    if uri.hostname not in ("127.0.0.1", "localhost") or not names:
        return f"NEO4J_URI ({settings.neo4j.neo4j_uri}) is not a managed test instance on this machine"
    (name,) = names
    wanted = os.environ.get("LYRA_TEST_INSTANCE")
    if wanted and wanted != name:
        return f"NEO4J_URI names the managed instance {name!r}, but LYRA_TEST_INSTANCE is {wanted!r}"
    server = LocalNeo4j(settings, name)
    if server.pid() is None:
        return f"no live pid file for the managed instance {name!r} under {server.dir} (run by another checkout?)"
    password = settings.neo4j.neo4j_password.get_secret_value() if settings.neo4j.neo4j_password else None
    if server.password() != password:
        return f"NEO4J_PASSWORD is not the password of the managed instance {name!r} under {server.dir}"
    return server


def reconnect(services: Services, timeout: float = 60) -> None:
    """Let the test's own driver find the restarted server (its pooled connections died with the old one)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            services.store.run("admin/database_summary")
            bind_neomodel(services.store.driver, services.settings)
            return
        except LyraError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


@pytest.fixture(scope="module")
def killable(settings: Settings, services: Services) -> Iterator[Killable]:
    found = managed_instance(settings)
    if isinstance(found, str):
        pytest.skip(f"kill -9 of Neo4j needs a managed instance this test may kill: {found}")
    target = Killable(found)
    try:
        yield target
    finally:  # whatever happened, the suite goes on with a running instance
        target.ensure_running(services)


# ----------------------------------------------------------------------------- `lyra serve`, paused inside a write
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PausedServe:
    """`lyra serve` (paused_serve.py) in a subprocess: stdout lines are collected, stderr goes to ``log``."""

    def __init__(self, env: dict[str, str], log: Path, pause_at: str | None) -> None:
        self.log = log
        self.lines: queue.Queue[str] = queue.Queue()
        with log.open("ab") as err:
            self.process = subprocess.Popen(
                [sys.executable, str(PAUSED_SERVE), "--port", str(free_port())],
                env={**env, "LYRA_TEST_PAUSE_AT": pause_at or ""},
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.strip())

    def wait_for(self, prefix: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=min(left, 1.0))
            except queue.Empty:
                assert self.process.poll() is None, f"lyra serve exited: {self.log_tail()}"
                continue
            if line.startswith(prefix):
                return line
        raise AssertionError(f"lyra serve never printed {prefix!r} within {timeout:.0f}s: {self.log_tail()}")

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self._reader.join(10)

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


# ----------------------------------------------------------------------------- one run of the job
@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documents, in one folder for every run (a page's URL is its file's path)."""
    folder = tmp_path_factory.mktemp("kill") / "sources"
    folder.mkdir()
    for name in DOCUMENTS:
        shutil.copy(CORPUS / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def nli_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The NLI cache every run shares (see the module's docstring)."""
    return tmp_path_factory.mktemp("nli_cache")


def serve_env(services: Services, state: Path, sources: Path, nli_cache: Path) -> dict[str, str]:
    state.mkdir()
    (state / "cache").symlink_to(nli_cache, target_is_directory=True)  # state/cache/nli.sqlite
    return {
        **os.environ,
        **neo4j_env(services.settings),
        "PYTHONPATH": str(ROOT),
        "LYRA_STATE_DIR": str(state),  # its own FAISS index
        "LYRA_ALLOWED_ROOTS": str(sources),
        "LYRA_JOB_POLL_SECONDS": "0.2",
        "LYRA_JOB_HEARTBEAT_SECONDS": "0.5",
        "LYRA_JOB_STALE_SECONDS": "3",
        "LYRA_JOB_MAX_ATTEMPTS": str(MAX_ATTEMPTS),
    }


def empty_graph(services: Services) -> None:
    bind_neomodel(services.store.driver, services.settings)
    services.store.run("admin/wipe_all_data", {"batch_size": 10_000})
    services.store.run("admin/mark_test_database")


def queue_job(services: Services, sources: Path) -> str:
    services.tasks.create_task(TASK, HYPOTHESIS)  # its hypothesis is its claim
    jobs = JobService(services.store, services.task_repo, [sources])
    queued = jobs.queue(QueueTargetsRequest(task_id=TASK, targets=[Target(kind="file", value=str(sources))]))
    return queued.jobs[0].job_id


def wait_for_job(services: Services, serve: PausedServe, timeout: float = JOB_SECONDS) -> dict[str, Any]:
    """The job once it ended (done, failed or cancelled)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        (job,) = services.store.run("jobs/task_jobs", {"task_id": TASK})
        if job["state"] in ("done", "failed", "cancelled"):
            return job
        assert serve.process.poll() is None, f"lyra serve exited: {serve.log_tail()}"
        time.sleep(0.5)
    raise AssertionError(f"the job did not end within {timeout:.0f}s: {job}\n{serve.log_tail()}")


# ----------------------------------------------------------------------------- what a run leaves in the graph
def rows(services: Services, cypher: str) -> list[dict[str, Any]]:
    records, _, _ = services.store.driver.execute_query(cypher, database_=services.store.database)
    return [record.data() for record in records]


@dataclass(frozen=True)
class Snapshot:
    labels: dict[str, int]
    relationships: dict[str, int]
    pages: list[str]
    fragments: list[tuple[str, str]]  # (text hash, page url) per EXTRACTED_FROM
    edges: list[tuple[str, str, str, str, float]]  # (fragment text hash, claim text, relation, label, confidence)
    duplicates: dict[str, int]

    @property
    def stance_edges(self) -> int:
        return sum(self.relationships.get(t, 0) for t in ("SUPPORTS", "REFUTES", "NEUTRAL"))


DUPLICATES = {  # what must be unique: (MATCH, key); a key matched more than once is a duplicate
    "pages per url": ("MATCH (p:Page)", "p.url"),
    "fragments per text hash": ("MATCH (f:Fragment)", "f.text_hash"),
    "EXTRACTED_FROM per (fragment, page)": ("MATCH (f)-[:EXTRACTED_FROM]->(p)", "[elementId(f), elementId(p)]"),
    "stance edges per (fragment, claim)": (
        "MATCH (f)-[:SUPPORTS|REFUTES|NEUTRAL]->(c)",
        "[elementId(f), elementId(c)]",
    ),
    "claims per (task, text)": ("MATCH (c:Claim)", "[c.task_id, c.text]"),
    "domains per name": ("MATCH (d:Domain)", "d.name"),
    "jobs per key": ("MATCH (j:Job)", "j.key"),
}


def snapshot(services: Services) -> Snapshot:
    # the fragment sequence's bookkeeping (Unsequenced, Sequence) depends on when the FAISS index last caught up
    labels = rows(
        services,
        "MATCH (n) UNWIND labels(n) AS label WITH label WHERE NOT label IN ['Unsequenced', 'Sequence'] "
        "RETURN label, count(*) AS n",
    )
    relationships = rows(services, "MATCH ()-[r]->() RETURN type(r) AS type, count(*) AS n")
    pages = rows(services, "MATCH (p:Page) RETURN p.url AS url ORDER BY url")
    fragments = rows(
        services,
        "MATCH (f:Fragment)-[:EXTRACTED_FROM]->(p:Page) RETURN f.text_hash AS hash, p.url AS url ORDER BY hash, url",
    )
    edges = rows(
        services,
        "MATCH (f:Fragment)-[r:SUPPORTS|REFUTES|NEUTRAL]->(c:Claim) "
        "RETURN f.text_hash AS hash, c.text AS claim, type(r) AS relation, r.nli_label AS label, "
        "r.nli_confidence AS confidence "
        "ORDER BY hash, claim, relation",
    )
    return Snapshot(
        labels={r["label"]: r["n"] for r in labels},
        relationships={r["type"]: r["n"] for r in relationships},
        pages=[r["url"] for r in pages],
        fragments=[(r["hash"], r["url"]) for r in fragments],
        edges=[(r["hash"], r["claim"], r["relation"], r["label"], r["confidence"]) for r in edges],
        duplicates={
            name: rows(services, f"{match} WITH {key} AS key, count(*) AS n WHERE n > 1 RETURN count(*) AS n")[0]["n"]
            for name, (match, key) in DUPLICATES.items()
        },
    )


@pytest.fixture(scope="module")
def reference(services: Services, sources: Path, nli_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    """The undisturbed run: the same job, run once by `lyra serve` from an empty graph."""
    empty_graph(services)
    queue_job(services, sources)
    folder = tmp_path_factory.mktemp("reference")
    serve = PausedServe(serve_env(services, folder / "state", sources, nli_cache), folder / "serve.log", None)
    try:
        job = wait_for_job(services, serve)
    finally:
        serve.stop()
    assert (job["state"], job["attempts"]) == ("done", 1), job
    taken = snapshot(services)
    assert taken.labels["Page"] == len(DOCUMENTS) and taken.labels["Claim"] == 1
    assert taken.labels["Fragment"] >= len(DOCUMENTS) and taken.stance_edges >= 1
    assert set(taken.duplicates.values()) == {0}, taken.duplicates
    return taken


# ----------------------------------------------------------------------------- the disturbed runs
@dataclass
class Disturbed:
    """One disturbed run of the job: a fresh graph (the ``graph`` fixture) and state folder, the shared NLI cache."""

    graph: Services
    reference: Snapshot
    env: dict[str, str]
    log: Path

    def serve(self, pause_at: str | None) -> PausedServe:
        return PausedServe(self.env, self.log, pause_at)

    def job(self) -> dict[str, Any]:
        (job,) = self.graph.store.run("jobs/task_jobs", {"task_id": TASK})
        return job

    def assert_same_as_reference(self, job: dict[str, Any]) -> None:
        assert (job["state"], job["attempts"]) == ("done", 2), f"{job}\n{self.log.read_text()[-4000:]}"
        taken, expected = snapshot(self.graph), self.reference
        assert taken.duplicates == dict.fromkeys(DUPLICATES, 0)
        assert taken.labels == expected.labels
        assert taken.relationships == expected.relationships
        assert taken.pages == expected.pages
        assert taken.fragments == expected.fragments
        assert taken.edges == expected.edges


@pytest.fixture
def disturbed(reference: Snapshot, graph: Services, sources: Path, nli_cache: Path, tmp_path: Path) -> Disturbed:
    queue_job(graph, sources)
    return Disturbed(graph, reference, serve_env(graph, tmp_path / "state", sources, nli_cache), tmp_path / "serve.log")


def run_with_neo4j_killed_inside(statement: str, killable: Killable, run: Disturbed) -> None:
    serve = run.serve(pause_at=statement)
    try:
        serve.wait_for(f"paused {statement}", JOB_SECONDS)
        killable.kill()  # the statement's writes are made, its transaction is not committed
        serve.go()  # its commit fails: the run is interrupted, its job requeued once Neo4j is back
        killable.start()
        reconnect(run.graph)
        job = wait_for_job(run.graph, serve)
    finally:
        serve.stop()
        killable.ensure_running(run.graph)  # the next test needs it even when this one failed
    run.assert_same_as_reference(job)


def test_neo4j_killed_while_pages_are_written(killable: Killable, disturbed: Disturbed) -> None:
    run_with_neo4j_killed_inside("evidence/upsert_pages", killable, disturbed)


def test_neo4j_killed_while_edges_are_written(killable: Killable, disturbed: Disturbed) -> None:
    run_with_neo4j_killed_inside("evidence/create_stance_edges", killable, disturbed)


def test_serve_killed_while_edges_are_written(disturbed: Disturbed) -> None:
    """The job's run dies with its server; the next server resumes it (after LYRA_JOB_STALE_SECONDS)."""
    first = disturbed.serve(pause_at="evidence/create_stance_edges")
    try:
        first.wait_for("paused evidence/create_stance_edges", JOB_SECONDS)
        first.kill()
    finally:
        first.stop()
    job = disturbed.job()
    assert (job["state"], job["attempts"]) == ("running", 1)  # left running by the dead server
    second = disturbed.serve(pause_at=None)
    try:
        job = wait_for_job(disturbed.graph, second)
    finally:
        second.stop()
    disturbed.assert_same_as_reference(job)
