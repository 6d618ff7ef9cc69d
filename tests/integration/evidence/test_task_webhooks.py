"""A task's webhook (docs/concepts/living-evidence.md) against a real HTTP receiver on 127.0.0.1 and the real
Neo4j: set_task_webhook refuses a loopback URL unless LYRA_FETCH_ALLOW_HOSTS allows it, makes the signing secret
once; after a run that moved the task's claims the receiver gets the JSON note with a valid HMAC-SHA256 signature;
a 503 is tried again, a 500 every time fails after the bounded attempts, a 404 is not tried again; every delivery is
recorded on its run and none fails the run; a removed webhook sends nothing. The secret is never in the graph
(query_graph over the task node and over every node finds only its fingerprint): it is in an owner-only file of the
state folder, which the task's clean-up empties; a secret an older Lyra kept on the task node moves to the file the
first time it is used, and a secret this state folder does not hold is never replaced by another one when signing."""

from __future__ import annotations

import hashlib
import hmac
import json
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from lyra.bootstrap import Services, build_http_app, build_services
from lyra.core.errors import InvalidInputError
from lyra.core.settings import load_settings
from lyra.models.api import AddClaimsRequest, QueryGraphOptions, QueryGraphRequest, StopTaskRequest
from lyra.models.webhooks import SetWebhookRequest
from lyra.services.webhooks import fingerprint
from tests.support.helpers import seed_task

pytestmark = pytest.mark.neo4j
TASK = "hooked_task"


@dataclass
class Receiver:
    port: int
    answers: list[int] = field(default_factory=list)  # statuses to answer, in order; then 200
    posts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def wait(self, count: int, seconds: float = 20.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + seconds
        while len(self.posts) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.posts


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status = receiver.answers.pop(0) if receiver.answers else 200
            receiver.posts.append(
                {"path": self.path, "body": body, "headers": {k.lower(): v for k, v in self.headers.items()},
                 "status": status}
            )  # fmt: skip
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(Receiver(0)))
    state = Receiver(server.server_address[1])
    server.RequestHandlerClass = _handler(state)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def hooked(graph: Services, tmp_path: Path) -> Iterator[Services]:
    """The whole application with loopback allowed (LYRA_FETCH_ALLOW_HOSTS=127.0.0.1), as an operator would, over
    a state folder of its own (where the webhook secrets are kept)."""
    s = graph.settings.neo4j
    settings = load_settings(
        neo4j_uri=s.neo4j_uri,
        neo4j_username=s.neo4j_username,
        neo4j_password=s.neo4j_password,
        fetch_allow_hosts=["127.0.0.1"],
        state_dir=tmp_path / "state",
    )
    services = build_services(settings, apply_schema=False)
    try:
        yield services
    finally:
        services.close()


def run_state(services: Services, run_id: str, seconds: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        records, _, _ = services.store.driver.execute_query(
            "MATCH (r:Run {id: $id}) RETURN r.webhook_status AS status, r.webhook_attempts AS attempts, "
            "r.webhook_http_status AS http_status, r.webhook_error AS error",
            {"id": run_id},
            database_=services.store.database,
        )
        row = records[0].data()
        if row["status"] is not None or time.monotonic() > deadline:
            return row
        time.sleep(0.05)


def test_a_run_that_moved_claims_reaches_the_tasks_webhook_signed(
    graph: Services, hooked: Services, receiver: Receiver
) -> None:
    seed_task(hooked, TASK, ["the treatment lowers blood pressure"])

    # the SSRF rules: loopback is refused unless the operator allows it
    with pytest.raises(InvalidInputError) as refused:
        graph.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=receiver.url))
    assert refused.value.field == "url"

    setting = hooked.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=receiver.url))
    assert setting.url == receiver.url and setting.secret is not None and len(setting.secret) >= 32
    secret = setting.secret
    again = hooked.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=receiver.url))
    assert again.secret is None  # shown once; the same secret is kept

    # 1. a run that moved claims: one POST, signed with the task's secret
    run_id, moved = hooked.timeline.record_run(TASK, "ingest")
    assert moved == 1
    (post,) = receiver.wait(1)
    assert post["path"] == "/hook" and post["headers"]["content-type"] == "application/json"
    expected = "sha256=" + hmac.new(secret.encode(), post["body"], hashlib.sha256).hexdigest()
    assert hmac.compare_digest(post["headers"]["x-lyra-signature"], expected)
    note = json.loads(post["body"])
    assert note["task_id"] == TASK and note["run_id"] == run_id and note["changed_claims"] == 1
    assert note["kind"] == "ingest" and note["event"] == "run"
    assert run_state(hooked, run_id) == {"status": "delivered", "attempts": 1, "http_status": 200, "error": None}

    # a run that moved nothing sends nothing
    _, still = hooked.timeline.record_run(TASK, "feedback")
    assert still == 0

    # 2. a 503 is tried again
    receiver.answers = [503, 503]
    hooked.operations.add_claims(AddClaimsRequest(task_id=TASK, claims=["the treatment lowers heart rate"]))
    run_id, moved = hooked.timeline.record_run(TASK, "ingest")
    assert moved == 1
    posts = receiver.wait(4)
    assert [p["status"] for p in posts[1:]] == [503, 503, 200]
    assert run_state(hooked, run_id) == {"status": "delivered", "attempts": 3, "http_status": 200, "error": None}

    # 3. a 500 every time: failed after the bounded attempts, recorded; the run itself was recorded
    receiver.answers = [500, 500, 500, 500]
    hooked.operations.add_claims(AddClaimsRequest(task_id=TASK, claims=["the treatment lowers cholesterol"]))
    run_id, moved = hooked.timeline.record_run(TASK, "ingest")
    assert run_id and moved == 1
    state = run_state(hooked, run_id)
    assert state["status"] == "failed" and state["attempts"] == 3 and state["http_status"] == 500
    assert "HTTP 500" in state["error"]
    assert len(receiver.posts) == 7

    # 4. a 404 is final: not tried again
    receiver.answers = [404]
    hooked.operations.add_claims(AddClaimsRequest(task_id=TASK, claims=["the treatment lowers glucose"]))
    run_id, _ = hooked.timeline.record_run(TASK, "ingest")
    state = run_state(hooked, run_id)
    assert (state["status"], state["attempts"], state["http_status"]) == ("failed", 1, 404)
    assert len(receiver.posts) == 8

    # 5. removed: nothing is sent
    removed = hooked.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=None))
    assert removed.url is None and removed.secret is None
    hooked.operations.add_claims(AddClaimsRequest(task_id=TASK, claims=["the treatment lowers weight"]))
    run_id, moved = hooked.timeline.record_run(TASK, "ingest")
    assert moved == 1
    time.sleep(1.0)
    assert len(receiver.posts) == 8 and run_state(hooked, run_id, seconds=0.1)["status"] is None


def test_a_rotated_secret_signs_from_then_on(hooked: Services, receiver: Receiver) -> None:
    seed_task(hooked, TASK, ["the treatment lowers blood pressure"])
    first = hooked.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=receiver.url))
    rotated = hooked.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=receiver.url, rotate_secret=True))
    assert first.secret and rotated.secret and rotated.secret != first.secret
    hooked.timeline.record_run(TASK, "ingest")
    (post,) = receiver.wait(1)
    signed = post["headers"]["x-lyra-signature"]
    assert signed == "sha256=" + hmac.new(rotated.secret.encode(), post["body"], hashlib.sha256).hexdigest()
    assert signed != "sha256=" + hmac.new(first.secret.encode(), post["body"], hashlib.sha256).hexdigest()
    with pytest.raises(InvalidInputError) as refused:
        hooked.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=None, rotate_secret=True))
    assert refused.value.field == "rotate_secret"


def test_the_rest_door_sets_and_removes_the_webhook(hooked: Services, receiver: Receiver) -> None:
    seed_task(hooked, TASK, ["the treatment lowers blood pressure"])
    app = build_http_app(hooked, workers=False, mcp=False)

    async def post(path: str, body: object) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            return await client.post(path, json=body)

    made = anyio.run(post, f"/api/v1/tasks/{TASK}/webhook", {"url": receiver.url})
    assert made.status_code == 200, made.text
    assert made.json()["url"] == receiver.url and made.json()["secret"]
    bad = anyio.run(post, f"/api/v1/tasks/{TASK}/webhook", {"url": "http://169.254.169.254/"})
    assert bad.status_code == 422 and bad.json()["field"] == "url"
    missing = anyio.run(post, "/api/v1/tasks/no_such_task/webhook", {"url": receiver.url})
    assert missing.status_code == 404
    gone = anyio.run(post, f"/api/v1/tasks/{TASK}/webhook", {"url": None})
    assert gone.status_code == 200 and gone.json()["url"] is None


def secrets_file(services: Services) -> Path:
    return services.settings.paths.state_dir / "auth" / "webhooks.json"


def graph_text(services: Services) -> str:
    """Everything query_graph (the assistant's read-only Cypher) shows of the task node and of every node."""
    task = services.operations.query_graph(
        QueryGraphRequest(cypher="MATCH (t:Task {id: $id}) RETURN properties(t) AS p", params={"id": TASK})
    )
    every = services.operations.query_graph(
        QueryGraphRequest(cypher="MATCH (n) RETURN properties(n) AS p", options=QueryGraphOptions(row_limit=1000))
    )
    assert task.row_count == 1 and not every.truncated
    return json.dumps([task.rows, every.rows], default=str)


def task_node(services: Services) -> dict[str, Any]:
    records, _, _ = services.store.driver.execute_query(
        "MATCH (t:Task {id: $id}) RETURN properties(t) AS p", {"id": TASK}, database_=services.store.database
    )
    return dict(records[0]["p"])


def test_the_secret_is_kept_out_of_the_graph_and_goes_with_the_task(hooked: Services, receiver: Receiver) -> None:
    seed_task(hooked, TASK, ["the treatment lowers blood pressure"])
    setting = hooked.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=receiver.url))
    secret = setting.secret
    assert secret is not None and setting.secret_fingerprint == fingerprint(secret)
    # the graph: the URL and the fingerprint, never the secret, for the assistant's query door as for anyone
    text = graph_text(hooked)
    assert secret not in text and receiver.url in text and fingerprint(secret) in text
    node = task_node(hooked)
    assert node["webhook_secret_fingerprint"] == fingerprint(secret) and "webhook_secret" not in node
    assert secret not in json.dumps(node, default=str)
    # the state folder: an owner-only file
    path = secrets_file(hooked)
    assert json.loads(path.read_text()) == {TASK: secret}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # the delivery signs with it
    hooked.timeline.record_run(TASK, "ingest")
    (post,) = receiver.wait(1)
    assert post["headers"]["x-lyra-signature"] == (
        "sha256=" + hmac.new(secret.encode(), post["body"], hashlib.sha256).hexdigest()
    )
    # a rotation names the new secret in the graph; the old one is gone from the file
    rotated = hooked.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=receiver.url, rotate_secret=True))
    assert rotated.secret and rotated.secret_fingerprint == fingerprint(rotated.secret) != fingerprint(secret)
    assert json.loads(path.read_text()) == {TASK: rotated.secret}
    assert rotated.secret not in graph_text(hooked)
    # the task's clean-up (stop_task with cleanup) forgets it
    hooked.operations.stop_task(StopTaskRequest(task_id=TASK, cleanup="soft"))
    assert json.loads(path.read_text()) == {}


def test_a_removed_webhook_forgets_its_secret(hooked: Services, receiver: Receiver) -> None:
    seed_task(hooked, TASK, ["the treatment lowers blood pressure"])
    hooked.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=receiver.url))
    removed = hooked.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=None))
    assert removed.url is None and removed.secret_fingerprint is None
    assert json.loads(secrets_file(hooked).read_text()) == {}
    assert "webhook_secret_fingerprint" not in task_node(hooked)


def test_a_secret_an_older_version_kept_on_the_task_moves_to_the_file_on_first_use(
    hooked: Services, receiver: Receiver
) -> None:
    seed_task(hooked, TASK, ["the treatment lowers blood pressure"])
    legacy = "an-old-secret-kept-on-the-task-node-by-an-older-lyra"
    hooked.store.driver.execute_query(  # what set_task_webhook of an older version wrote
        "MATCH (t:Task {id: $id}) SET t.webhook_url = $url, t.webhook_secret = $secret, t.webhook_set_at = datetime()",
        {"id": TASK, "url": receiver.url, "secret": legacy},
        database_=hooked.store.database,
    )
    assert legacy in graph_text(hooked)
    run_id, moved = hooked.timeline.record_run(TASK, "ingest")
    assert moved == 1
    (post,) = receiver.wait(1)
    assert post["headers"]["x-lyra-signature"] == (
        "sha256=" + hmac.new(legacy.encode(), post["body"], hashlib.sha256).hexdigest()
    )
    assert run_state(hooked, run_id)["status"] == "delivered"
    node = task_node(hooked)
    assert "webhook_secret" not in node and node["webhook_secret_fingerprint"] == fingerprint(legacy)
    assert legacy not in graph_text(hooked)
    assert json.loads(secrets_file(hooked).read_text()) == {TASK: legacy}
    # setting the same URL again keeps the migrated secret (shown never again)
    again = hooked.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=receiver.url))
    assert again.secret is None and again.secret_fingerprint == fingerprint(legacy)


def test_an_old_node_secret_is_migrated_by_setting_the_webhook_too(hooked: Services, receiver: Receiver) -> None:
    seed_task(hooked, TASK, ["the treatment lowers blood pressure"])
    legacy = "another-old-secret-on-the-task-node"
    hooked.store.driver.execute_query(
        "MATCH (t:Task {id: $id}) SET t.webhook_url = $url, t.webhook_secret = $secret",
        {"id": TASK, "url": receiver.url, "secret": legacy},
        database_=hooked.store.database,
    )
    kept = hooked.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=receiver.url))
    assert kept.secret is None and kept.secret_fingerprint == fingerprint(legacy)
    assert "webhook_secret" not in task_node(hooked)
    assert json.loads(secrets_file(hooked).read_text()) == {TASK: legacy}


def test_a_secret_this_state_folder_does_not_hold_is_not_replaced_when_signing(
    hooked: Services, receiver: Receiver
) -> None:
    seed_task(hooked, TASK, ["the treatment lowers blood pressure"])
    setting = hooked.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=receiver.url))
    assert setting.secret is not None
    secrets_file(hooked).write_text(json.dumps({TASK: "a-secret-from-elsewhere"}))  # not the one the graph names
    run_id, _ = hooked.timeline.record_run(TASK, "ingest")
    state = run_state(hooked, run_id)
    assert state["status"] == "failed" and state["attempts"] == 0
    assert "no signing secret" in state["error"] and fingerprint(setting.secret) in state["error"]
    time.sleep(0.5)
    assert receiver.posts == []
    # setting the webhook again here makes a new secret (shown once), which signs from then on
    renewed = hooked.operations.set_task_webhook(SetWebhookRequest(task_id=TASK, url=receiver.url))
    assert renewed.secret and renewed.secret != setting.secret
    hooked.operations.add_claims(AddClaimsRequest(task_id=TASK, claims=["the treatment lowers heart rate"]))
    hooked.timeline.record_run(TASK, "ingest")
    (post,) = receiver.wait(1)
    assert post["headers"]["x-lyra-signature"] == (
        "sha256=" + hmac.new(renewed.secret.encode(), post["body"], hashlib.sha256).hexdigest()
    )
