"""Separate processes for test_shared_politeness.py.

``fetch CONFIG_DIR WARM_URL URL...``: a fetcher with the politeness state held in Neo4j, beside the fetchers of the
test process. It connects with its own driver to the Neo4j in NEO4J_URI / NEO4J_USERNAME / NEO4J_PASSWORD, fetches
WARM_URL (its client's first request), prints ``ready``, waits for a line on stdin (so both sides start at once),
fetches the URLs in two threads, prints one JSON line per outcome code, then ``done``.

``serve``: the test web server, in a process of its own so the fetchers' work cannot delay its clock readings;
prints its port, then one JSON line ``{"t", "host", "path"}`` per request (``t``: CLOCK_MONOTONIC, which every
process of the machine shares).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PAGE = (
    "<!doctype html><html><head><title>Sleep</title></head><body><article><h1>Sleep and caffeine</h1><p>"
    + "Caffeine taken late in the day shortened sleep in a randomised trial of adults. " * 8
    + "</p></article></body></html>"
).encode()


def resolver(host: str, port: int) -> list[str]:
    if host.endswith(".test"):
        return ["127.0.0.1"]
    raise OSError(f"no network in tests: {host}")


def serve() -> None:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: no connection set-up between a fetcher and its next request

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            at = time.monotonic()
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
            with lock:
                print(json.dumps({"t": at, "host": host, "path": self.path}), flush=True)
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    sys.stdin.readline()  # runs until its stdin closes
    server.shutdown()


def fetch(config_dir: Path, warm: str, urls: list[str]) -> None:
    from lyra.core.settings import load_settings
    from lyra.graph.catalog import CypherCatalog
    from lyra.graph.store import GraphStore, open_driver
    from lyra.services.politeness import GraphPageCounter, GraphRateLimiter
    from lyra.sources.web import WebFetcher

    settings = load_settings(
        config_dir=config_dir, fetch_allow_hosts=["127.0.0.1"], web_robots_txt=False, web_timeout_seconds=30.0
    )
    assert settings.neo4j.neo4j_uri and settings.neo4j.neo4j_password
    driver = open_driver(
        settings.neo4j.neo4j_uri, settings.neo4j.neo4j_username, settings.neo4j.neo4j_password.get_secret_value()
    )
    store = GraphStore(driver, CypherCatalog.load(settings.paths.cypher_dir), settings)
    fetcher = WebFetcher.from_settings(
        settings, counter=GraphPageCounter(store), limiter=GraphRateLimiter(store), resolver=resolver
    )
    assert fetcher.fetch(warm).code == "ok"
    print("ready", flush=True)
    sys.stdin.readline()
    lock = threading.Lock()

    def work(part: list[str]) -> None:
        for url in part:
            code = fetcher.fetch(url).code
            with lock:
                print(json.dumps({"url": url, "code": code}), flush=True)

    threads = [threading.Thread(target=work, args=(urls[i::2],)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("done", flush=True)
    fetcher.close()
    store.close()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve()
    else:
        fetch(Path(sys.argv[2]), sys.argv[3], sys.argv[4:])
