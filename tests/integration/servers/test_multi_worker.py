"""Several `lyra serve` workers over one Neo4j, as on several hosts (real processes on 127.0.0.1, each with its own
state folder; real Neo4j reached through the routing driver, ``neo4j://``; real offline models):

1. two workers share one task's queue of small file targets, one of them overlapping all the others (a folder):
   every job runs exactly once, on one named worker; every (fragment, claim) pair has one edge; both workers
   serve the same materials;
2. a worker killed (SIGKILL) mid-job: the other takes the job over after the lease and completes it, nothing lost;
3. a late joiner (an entry without workers, and a worker started last with an empty state folder) finds the same
   similar fragments as the others and the near-duplicate of a passage the first workers wrote, and does not judge
   that passage's pair again; the entry, running all along, finds what a worker ingested after it had opened its
   index.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lyra.bootstrap import Services
from lyra.core.ids import text_hash
from lyra.sources.chunking import chunk_text
from tests.support.helpers import ROOT, Served, free_port, neo4j_env

pytestmark = [pytest.mark.neo4j, pytest.mark.models]
CORPUS = ROOT / "config" / "examples" / "corpus"
CLAIM = "Microplastic particles are present in bottled drinking water at higher concentrations than in tap water."
TASK = "shared_queue"
MAX_WAIT = 600.0
API = "/api/v1"


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    folder = tmp_path / "sources"
    folder.mkdir()
    for path in sorted(CORPUS.glob("microplastics_*")):
        shutil.copy(path, folder / path.name)
    return folder


@pytest.fixture
def servers() -> Iterator[list[Served]]:
    started: list[Served] = []
    yield started
    for server in started:
        server.stop()


def routed(uri: str) -> str:
    """The routing form of the test Neo4j's address: what a cluster or Aura is reached with."""
    return re.sub(r"^bolt(\+s|\+ssc)?://", lambda m: f"neo4j{m.group(1) or ''}://", uri)


def worker(graph: Services, tmp_path: Path, sources: Path, name: str, *args: str) -> Served:
    env = {
        **os.environ,
        **neo4j_env(graph.settings),
        "NEO4J_URI": routed(str(graph.settings.neo4j.neo4j_uri)),
        "LYRA_STATE_DIR": str(tmp_path / f"state_{name}"),  # as on another host: its own FAISS file and caches
        "LYRA_ALLOWED_ROOTS": str(sources),
        "LYRA_WORKER_NAME": name,
        "LYRA_JOB_POLL_SECONDS": "0.2",
        "LYRA_JOB_HEARTBEAT_SECONDS": "0.5",
        "LYRA_JOB_STALE_SECONDS": "3",  # the lease: a job not beaten for 3 s is taken over
        "LYRA_INDEX_SYNC_SECONDS": "0",
        "LYRA_STANCE_USE_LLM": "0",  # the trained stance judge alone: real, offline, fast enough for four processes
    }
    return Served(env, free_port(), tmp_path / f"{name}.log", args)


def start(servers: list[Served], *new: Served) -> None:
    for server in new:
        servers.append(server)
        server.start()


def jobs(graph: Services) -> dict[str, dict[str, Any]]:
    return {j["value"]: j for j in graph.store.run("jobs/task_jobs", {"task_id": TASK})}


def wait_drained(graph: Services, servers: list[Served]) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + MAX_WAIT
    while time.monotonic() < deadline:
        state = jobs(graph)
        if all(j["state"] not in ("queued", "running") for j in state.values()):
            return state
        time.sleep(0.3)
    logs = "\n".join(s.log.read_text()[-2000:] for s in servers)
    raise AssertionError(f"jobs still pending after {MAX_WAIT:.0f}s: {jobs(graph)}\n{logs}")


def queue(server: Served, *paths: Path) -> dict[str, Any]:
    targets = [{"kind": "file", "value": str(p)} for p in paths]
    answer = httpx.post(f"{server.base}{API}/tasks/{TASK}/targets", json={"targets": targets}, timeout=60)
    assert answer.status_code == 202, answer.text
    return dict(answer.json())


def edges_per_pair(graph: Services) -> tuple[int, int]:
    records, _, _ = graph.store.driver.execute_query(
        "MATCH (f:Fragment)-[r:SUPPORTS|REFUTES|NEUTRAL]->(c:Claim {task_id: $t}) "
        "WITH f, c, count(r) AS n RETURN max(n) AS most, count(*) AS pairs",
        t=TASK,
        database_=graph.store.database,
    )
    return int(records[0]["most"] or 0), int(records[0]["pairs"])


def page_fragments(graph: Services, path: Path) -> list[dict[str, Any]]:
    records, _, _ = graph.store.driver.execute_query(
        "MATCH (f:Fragment)-[:EXTRACTED_FROM]->(p:Page) WHERE p.url = $url RETURN f.id AS id, f.text AS text",
        url=path.resolve().as_uri(),
        database_=graph.store.database,
    )
    return [dict(r) for r in records]


def materials(server: Served) -> dict[str, Any]:
    answer = httpx.get(f"{server.base}{API}/tasks/{TASK}/materials", timeout=120).json()
    answer.pop("computed_at")
    return dict(answer)


def search(server: Served, text: str, k: int = 5) -> list[dict[str, Any]]:
    answer = httpx.post(f"{server.base}{API}/search", json={"query": text, "k": k}, timeout=300)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["hits"])


def long_survey(path: Path, paragraphs: int = 400) -> Path:
    """A long local file (so its job is surely still running when its worker is killed): distinct paragraphs."""
    rng = random.Random(14)
    sources = ["bottled", "tap", "well", "river", "spring", "rain"]
    polymers = ["polyethylene", "polypropylene", "polystyrene", "nylon", "PET", "PVC"]
    lines = []
    for i in range(paragraphs):
        lines.append(
            f"Site {i} ({rng.choice(['north', 'south', 'east', 'west'])} district, survey {1990 + i % 35}): "
            f"{rng.randint(1, 900)} particles of {rng.choice(polymers)} per litre in {rng.choice(sources)} water; "
            f"the sampler used a {rng.choice([5, 10, 20, 50])} micrometre mesh and {rng.randint(2, 40)} replicates, "
            f"and the blank held {rng.randint(0, 30)} particles."
        )
    path.write_text("\n\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_workers_share_the_queue_take_over_a_dead_workers_job_and_find_what_the_others_wrote(
    graph: Services, tmp_path: Path, sources: Path, servers: list[Served]
) -> None:
    # ------------------------------------------------ 1. two workers, one queue
    a, b = worker(graph, tmp_path, sources, "worker_a"), worker(graph, tmp_path, sources, "worker_b")
    start(servers, a, b)
    created = httpx.post(f"{a.base}{API}/tasks", json={"hypothesis": CLAIM, "config": {"task_id": TASK}}, timeout=60)
    assert created.status_code == 201, created.text
    files = sorted(sources.iterdir())
    assert queue(b, *files, sources)["queued"] == len(files) + 1  # queued through the other worker's door
    done = wait_drained(graph, servers)
    assert {(j["state"], j["attempts"]) for j in done.values()} == {("done", 1)}, done
    assert all(len(j["workers"]) == 1 for j in done.values())
    assert {j["workers"][0] for j in done.values()} == {"worker_a", "worker_b"}  # both took jobs
    folder_job = done[str(sources.resolve())]
    assert json.loads(folder_job["result"])["documents"] == len(files)  # overlaps every file job
    most, pairs = edges_per_pair(graph)
    assert most == 1 and pairs >= len(files)  # one edge per (fragment, claim), however the jobs interleaved
    assert materials(a) == materials(b)

    # ------------------------------------------------ 2. a worker dies mid-job
    survey = long_survey(sources / "long_survey.md")
    queue(a, survey)
    deadline = time.monotonic() + MAX_WAIT
    running: dict[str, Any] = {}
    while time.monotonic() < deadline and not running:
        job = jobs(graph)[str(survey.resolve())]
        running = job if job["state"] == "running" else {}
        time.sleep(0.05)
    assert running, "the survey job never started"
    (victim_name,) = running["workers"]
    victim, survivor = (a, b) if victim_name == "worker_a" else (b, a)
    victim.kill()
    job = jobs(graph)[str(survey.resolve())]
    assert (job["state"], job["workers"]) == ("running", [victim_name]), "killed mid-job, before it could finish"

    done = wait_drained(graph, servers)
    job = done[str(survey.resolve())]
    survivor_name = "worker_b" if victim_name == "worker_a" else "worker_a"
    assert (job["state"], job["attempts"], job["workers"]) == ("done", 2, [victim_name, survivor_name])
    result = json.loads(job["result"])
    passages = {text_hash(p.text) for p in chunk_text(survey.read_text(encoding="utf-8"))}
    assert len(page_fragments(graph, survey)) + result["fragments_near_duplicate"] == len(passages) > 300
    most, _ = edges_per_pair(graph)
    assert most == 1

    # ------------------------------------------------ 3. late joiners
    entry = worker(graph, tmp_path, sources, "entry_c", "--no-workers")  # MCP/REST entry, no jobs, empty state
    start(servers, entry)
    northgate = sources / "microplastics_northgate_study.md"
    original = page_fragments(graph, northgate)[0]
    query = original["text"][:300]
    from_entry, from_survivor = search(entry, query), search(survivor, query)
    assert from_entry and [h["id"] for h in from_entry] == [h["id"] for h in from_survivor]
    assert [h["score"] for h in from_entry] == pytest.approx([h["score"] for h in from_survivor], abs=1e-4)
    assert from_entry[0]["id"] == original["id"]

    late = worker(graph, tmp_path, sources, "worker_d")  # a worker joining last, with an empty FAISS file
    start(servers, late)
    survivor.stop()  # from here on only the late worker runs jobs
    words = original["text"].split()
    words[len(words) // 2] = "notably"  # one word changed: a near-duplicate, not the same text
    near_copy = sources / "near_copy.md"
    near_copy.write_text(" ".join(words) + "\n", encoding="utf-8")
    queue(entry, near_copy)
    done = wait_drained(graph, servers)
    job = done[str(near_copy.resolve())]
    assert (job["state"], job["workers"]) == ("done", ["worker_d"]), job
    result = json.loads(job["result"])
    assert (result["fragments_near_duplicate"], result["fragments_new"]) == (1, 0)
    # the pair (first copy, claim) was judged by worker a or b; worker d's NLI cache is empty, yet it is not judged
    # again: the edge in the graph is the pair's judgement
    assert result["pairs_judged"] == 0 and result["edges_existing"] >= 1
    assert [f["id"] for f in page_fragments(graph, near_copy)] == [original["id"]]  # linked to the first copy

    fresh = sources / "fresh_finding.md"
    fresh.write_text(
        "A ferry survey of the northern fjord counted glitter flakes and fishing-line fibres in every surface "
        "trawl, with the densest patch drifting behind the fish farms after the autumn storms.\n",
        encoding="utf-8",
    )
    queue(entry, fresh)  # run by the late worker after the entry opened its index: the entry must catch up
    wait_drained(graph, servers)
    (fresh_fragment,) = page_fragments(graph, fresh)
    assert (
        search(entry, "glitter flakes and fishing-line fibres behind fish farms", k=1)[0]["id"] == fresh_fragment["id"]
    )
    assert materials(entry) == materials(late)
