"""The settings a deployment of several workers over a cluster or Aura uses: routing and TLS addresses are accepted,
other schemes refused by name; the job lease must outlive two heartbeats; worker names are plain tokens."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lyra.core.settings import load_settings
from lyra.services.jobs import default_worker_name


@pytest.mark.parametrize(
    "uri",
    ["neo4j+s://abcd1234.databases.neo4j.io", "neo4j://core1.example:7687", "neo4j+ssc://10.0.0.5", "bolt://127.0.0.1"],
)
def test_cluster_aura_and_single_server_addresses_are_accepted(uri: str) -> None:
    assert load_settings(neo4j_uri=uri, neo4j_password="x" * 8).neo4j.neo4j_uri == uri


def test_another_scheme_is_refused_with_the_accepted_ones_named() -> None:
    with pytest.raises(ValidationError, match=r"NEO4J_URI must start with one of .*neo4j\+s://"):
        load_settings(neo4j_uri="http://127.0.0.1:7474")


def test_the_job_lease_must_outlive_two_heartbeats() -> None:
    assert load_settings(job_heartbeat_seconds=0.5, job_stale_seconds=3).jobs.job_stale_seconds == 3
    with pytest.raises(ValidationError, match=r"LYRA_JOB_STALE_SECONDS .* at least twice LYRA_JOB_HEARTBEAT_SECONDS"):
        load_settings(job_heartbeat_seconds=5, job_stale_seconds=6)


def test_worker_names_are_plain_tokens_and_unique_per_process_by_default() -> None:
    assert load_settings(worker_name="host-2.worker_1").jobs.worker_name == "host-2.worker_1"
    with pytest.raises(ValidationError, match="worker_name"):
        load_settings(worker_name="two words")
    first, second = default_worker_name(), default_worker_name()
    assert first != second and first.rsplit("-", 2)[1].isdigit()
