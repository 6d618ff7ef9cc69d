"""Benchmark: get_materials and get_status latency on a large task, and get_materials over HTTP under load.

get_materials lists 10 evidence items per claim by default (counts and confidence use every edge); the
1k-claim task is also timed with every evidence item listed.

1. A 10k-claim / 200k-edge task: in-process latency of get_materials and get_status (the service layer both
   front doors call).
2. A 1k-claim task: the same in-process latency, then ``lyra serve`` in a separate process and 8 concurrent HTTP
   clients calling ``GET /api/v1/tasks/{id}/materials`` for a fixed number of requests: requests/s, p50/p95.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

from lyra.bench.confidence import build_synthetic_task
from lyra.bootstrap import Services
from lyra.models.api import MATERIALS_PAGE_MAX, GetMaterialsRequest, GetStatusRequest, MaterialsOptions

TARGET_P95_MS = 150.0  # the scale target: get_materials for 1k claims / 20k edges, p95 in process


class Latency(BaseModel):
    runs: int
    p50_ms: float
    p95_ms: float
    max_ms: float


class HttpLoad(BaseModel):
    clients: int
    requests: int
    seconds: float
    requests_per_second: float
    latency: Latency
    errors: int


class ApiBenchResult(BaseModel):
    large_claims: int
    large_edges: int
    large_materials: Latency
    large_status: Latency
    small_claims: int
    small_edges: int
    small_materials: Latency
    small_materials_all_evidence: Latency
    small_materials_http_one_client: Latency
    small_materials_http_loaded: HttpLoad
    materials_bytes: int
    target_p95_ms: float
    target_met_one_client: bool
    target_met_under_load: bool


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def latency(samples: list[float]) -> Latency:
    ms = [s * 1000 for s in samples]
    return Latency(runs=len(ms), p50_ms=statistics.median(ms), p95_ms=_percentile(ms, 0.95), max_ms=max(ms))


def time_calls(fn: Callable[[], Any], runs: int) -> Latency:
    fn()  # warm-up (plan cache, page cache)
    samples: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return latency(samples)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(port: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "lyra", "serve", "--no-workers", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=os.environ.copy(),
        )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"lyra serve exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    process.kill()
    raise RuntimeError("lyra serve did not answer in 120 s")


def http_load(url: str, clients: int, requests_per_client: int) -> HttpLoad:
    samples: list[float] = []
    errors = 0
    lock = threading.Lock()

    def client() -> None:
        nonlocal errors
        with httpx.Client(timeout=60) as http:
            for _ in range(requests_per_client):
                start = time.perf_counter()
                response = http.get(url)
                elapsed = time.perf_counter() - start
                with lock:
                    samples.append(elapsed)
                    errors += response.status_code != 200

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    return HttpLoad(
        clients=clients,
        requests=len(samples),
        seconds=seconds,
        requests_per_second=len(samples) / seconds,
        latency=latency(samples),
        errors=errors,
    )


def run_api_bench(
    services: Services,
    large_claims: int = 10_000,
    small_claims: int = 1_000,
    edges_per_claim: int = 20,
    runs: int = 10,
    clients: int = 8,
    requests_per_client: int = 25,
    keep: bool = False,
) -> ApiBenchResult:
    ops = services.operations
    large, small = f"bench_api_{large_claims}", f"bench_api_{small_claims}"
    for task in (large, small):
        if services.task_repo.exists(task):
            services.cleanup.cleanup(task, "hard")
    try:
        print(f"building {large_claims} claims x {edges_per_claim} edges ...", file=sys.stderr)
        build_synthetic_task(services, large, large_claims, edges_per_claim, seed=11)
        large_materials = time_calls(
            lambda: ops.get_materials(GetMaterialsRequest(task_id=large, limit=MATERIALS_PAGE_MAX)), max(3, runs // 3)
        )
        large_status = time_calls(lambda: ops.get_status(GetStatusRequest(task_id=large)), runs)

        print(f"building {small_claims} claims x {edges_per_claim} edges ...", file=sys.stderr)
        build_synthetic_task(services, small, small_claims, edges_per_claim, seed=12)
        small_materials = time_calls(
            lambda: ops.get_materials(GetMaterialsRequest(task_id=small, limit=MATERIALS_PAGE_MAX)), runs
        )
        everything = GetMaterialsRequest(
            task_id=small, options=MaterialsOptions(evidence_limit=1000), limit=MATERIALS_PAGE_MAX
        )
        small_all = time_calls(lambda: ops.get_materials(everything), runs)

        port = _free_port()
        log = services.settings.paths.state_dir / "bench_api_serve.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        process = _serve(port, log)
        try:
            url = f"http://127.0.0.1:{port}/api/v1/tasks/{small}/materials"
            body = httpx.get(url, timeout=60)
            body.raise_for_status()
            one = http_load(url, 1, runs).latency
            print(f"{clients} clients x {requests_per_client} requests ...", file=sys.stderr)
            loaded = http_load(url, clients, requests_per_client)
        finally:
            process.terminate()
            process.wait(30)
    finally:
        if not keep:
            for task in (large, small):
                if services.task_repo.exists(task):
                    services.cleanup.cleanup(task, "hard")
    return ApiBenchResult(
        large_claims=large_claims,
        large_edges=large_claims * edges_per_claim,
        large_materials=large_materials,
        large_status=large_status,
        small_claims=small_claims,
        small_edges=small_claims * edges_per_claim,
        small_materials=small_materials,
        small_materials_all_evidence=small_all,
        small_materials_http_one_client=one,
        small_materials_http_loaded=loaded,
        materials_bytes=len(body.content),
        target_p95_ms=TARGET_P95_MS,
        target_met_one_client=one.p95_ms < TARGET_P95_MS,
        target_met_under_load=loaded.latency.p95_ms < TARGET_P95_MS,
    )
