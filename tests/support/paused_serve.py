"""`lyra serve` with a pause point inside one named write statement (test_neo4j_kill.py starts it).

With ``LYRA_TEST_PAUSE_AT=evidence/upsert_pages`` (any write statement of ``cypher/``), the first time a worker runs
that statement it runs it inside its write transaction and, before the transaction commits, prints
``paused <statement>`` on stdout and waits (at most ``LYRA_TEST_PAUSE_SECONDS``, 300) for a line ``go`` on stdin.
Meanwhile the test kills Neo4j (or this server) with SIGKILL: the kill lands while the statement's writes are
made but not committed. Then the transaction goes on as the product's code makes it: the driver retries the work
while Neo4j is down, and the job's error handling takes over when it gives up. Later runs of the statement are not
paused. Everything else is the real `lyra serve` (arguments as for `lyra serve`).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from neo4j import ManagedTransaction

from lyra.graph.catalog import CypherQuery
from lyra.graph.store import GraphStore, Row

PAUSE_AT = os.environ.get("LYRA_TEST_PAUSE_AT", "")
PAUSE_SECONDS = float(os.environ.get("LYRA_TEST_PAUSE_SECONDS", "300"))
_go = threading.Event()
_paused = threading.Event()
_original_managed = GraphStore._managed


def _read_commands() -> None:
    for line in sys.stdin:
        if line.strip() == "go":
            _go.set()
    _go.set()  # stdin closed: never wait for nothing


def _managed(self: GraphStore, query: CypherQuery, args: Callable[[], dict[str, Any]], *, read: bool) -> list[Row]:
    if read or query.name != PAUSE_AT or _paused.is_set():
        return _original_managed(self, query, args, read=read)

    def work(tx: ManagedTransaction) -> list[Row]:
        rows = [dict(record.items()) for record in tx.run(query.text, args())]  # type: ignore[no-untyped-call]
        if not _paused.is_set():
            _paused.set()
            print(f"paused {query.name} rows={len(rows)}", flush=True)
            if not _go.wait(PAUSE_SECONDS):
                print("pause timed out", flush=True)
        return rows

    with self.driver.session(database=self.database) as session:
        return session.execute_write(work)


def main() -> None:
    if PAUSE_AT:
        GraphStore._managed = _managed  # type: ignore[method-assign]
        threading.Thread(target=_read_commands, name="pause-commands", daemon=True).start()
    from lyra.cli import app

    app(["serve", *sys.argv[1:]])


if __name__ == "__main__":
    main()
