"""A separate process that claims jobs the way a worker does (test_job_claims.py starts several of these).

It connects with its own driver to the Neo4j in NEO4J_URI / NEO4J_USERNAME / NEO4J_PASSWORD, prints ``ready``,
waits for a line on stdin (so every claimer starts at once), prints ``claiming`` and claims jobs through
``GraphStore.run("jobs/claim_next_job", ...)`` until the queue stays empty, printing one JSON line per answer.
"""

from __future__ import annotations

import json
import sys

from lyra.core.ids import new_id
from lyra.core.settings import load_settings
from lyra.graph.catalog import CypherCatalog
from lyra.graph.store import GraphStore, open_driver


def main() -> None:
    name = sys.argv[1]
    settings = load_settings()
    assert settings.neo4j.neo4j_uri and settings.neo4j.neo4j_password
    driver = open_driver(
        settings.neo4j.neo4j_uri, settings.neo4j.neo4j_username, settings.neo4j.neo4j_password.get_secret_value()
    )
    store = GraphStore(driver, CypherCatalog.load(settings.paths.cypher_dir), settings)
    print("ready", flush=True)
    sys.stdin.readline()
    print("claiming", flush=True)
    empty = 0
    while empty < 3:
        rows = store.run("jobs/claim_next_job", {"worker": name, "claim": new_id("claim"), "max_attempts": 3})
        if not rows:
            empty += 1
            continue
        print(json.dumps({"id": rows[0]["id"], "won": rows[0]["won"], "attempts": rows[0]["attempts"]}), flush=True)
    store.close()


if __name__ == "__main__":
    main()
