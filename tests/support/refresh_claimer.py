"""A separate process that claims due scheduled refreshes the way `lyra serve`'s scheduler does
(test_refresh_schedule.py starts two of these).

It connects with its own driver to the Neo4j in NEO4J_URI / NEO4J_USERNAME / NEO4J_PASSWORD, prints ``ready``,
waits for a line on stdin (so both start at once), then asks ``cypher/schedule/claim_due_refreshes`` ``rounds`` times
(argv[1]) with the current time, at most ``limit`` (argv[2]) due tasks each, and prints one JSON line per task it
won (a small limit spreads the claims over many rounds, so the two processes' statements overlap).
"""

from __future__ import annotations

import json
import secrets
import sys
import time

from lyra.core.settings import load_settings
from lyra.graph.catalog import CypherCatalog
from lyra.graph.store import GraphStore, open_driver


def main() -> None:
    rounds, limit = int(sys.argv[1]), int(sys.argv[2])
    settings = load_settings()
    assert settings.neo4j.neo4j_uri and settings.neo4j.neo4j_password
    driver = open_driver(
        settings.neo4j.neo4j_uri, settings.neo4j.neo4j_username, settings.neo4j.neo4j_password.get_secret_value()
    )
    store = GraphStore(driver, CypherCatalog.load(settings.paths.cypher_dir), settings)
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(rounds):
        params = {"now_ms": int(time.time() * 1000), "token": secrets.randbelow(2**52) + 1, "limit": limit}
        for row in store.run("schedule/claim_due_refreshes", params):
            if row["won"]:
                print(json.dumps({"task_id": row["task_id"]}), flush=True)
    print("done", flush=True)
    store.close()


if __name__ == "__main__":
    main()
