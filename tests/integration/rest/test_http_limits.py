"""Request bodies are bounded by the bytes actually received, on a real `lyra serve` (uvicorn on 127.0.0.1).

Before the fix only a declared Content-Length was checked: a chunked 150 MB body without one was read and
parsed in full. Here raw sockets send chunked bodies of 50 MB to a REST route and to /mcp: the server answers 413
with the documented error body long before the end, its memory does not grow by the body's size, and the route
never ran (the task the body would have created does not exist).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from lyra.bootstrap import Services
from tests.support.helpers import ROOT, neo4j_env
from tests.support.raw_http import CHUNK, post_chunked

pytestmark = pytest.mark.neo4j
LIMIT = 1_000_000
HUGE = 50_000_000
HYPOTHESIS = "Chunked request bodies are bounded by the bytes received"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rss_bytes(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")


@pytest.fixture
def server(graph: Services, tmp_path: Path) -> Iterator[Server]:
    port = free_port()
    env = {
        **os.environ,
        **neo4j_env(graph.settings),
        "LYRA_STATE_DIR": str(tmp_path / "state"),
        "LYRA_API_MAX_BODY_BYTES": str(LIMIT),
    }
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "lyra", "serve", "--no-workers", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    served = Server(process, port)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            try:
                if httpx.get(f"{served.base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "lyra serve did not start"
            time.sleep(0.3)
        yield served
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def task_ids(server: Server) -> set[str]:
    return {t["id"] for t in httpx.get(f"{server.base}/api/v1/tasks").json()["tasks"]}


@pytest.mark.parametrize("path", ["/api/v1/tasks", "/mcp"])
def test_a_chunked_body_over_the_limit_is_refused_early_with_413(server: Server, path: str) -> None:
    before = server.rss_bytes()
    answer = post_chunked(server.port, path, b'{"hypothesis": "' + HYPOTHESIS.encode() + b'"', HUGE, b"}")
    grown = server.rss_bytes() - before

    assert answer.status == 413
    assert answer.body == {"error": "too_large", "message": f"request body over {LIMIT} bytes", "field": "body"}
    assert answer.sent < HUGE // 4, f"the server let {answer.sent} bytes in before answering"
    assert grown < 20_000_000, f"the server grew by {grown} bytes"
    assert task_ids(server) == set(), "the route never ran"
    assert httpx.get(f"{server.base}/healthz").status_code == 200


def test_a_chunked_body_under_the_limit_is_read_as_usual(server: Server) -> None:
    answer = post_chunked(server.port, "/api/v1/tasks", b'{"hypothesis": "' + HYPOTHESIS.encode() + b'"', CHUNK, b"}")
    assert answer.status == 201, answer.body
    assert task_ids(server) == {answer.body["task_id"]}


def test_a_declared_length_over_the_limit_is_refused_unread(server: Server) -> None:
    response = httpx.post(f"{server.base}/api/v1/tasks", content=b" " * (LIMIT + 1))
    assert response.status_code == 413 and response.json()["error"] == "too_large"
