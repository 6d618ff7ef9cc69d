"""Webhook signing, the secrets file and the freshness summary, without Neo4j or a network."""

from __future__ import annotations

import hashlib
import hmac
import json
import stat
from pathlib import Path

from lyra.models.refresh import PageCheck
from lyra.services.freshness import _summary
from lyra.services.webhooks import WebhookSecrets, fingerprint, signature


def test_the_signature_is_the_hex_hmac_sha256_of_the_raw_body() -> None:
    body = b'{"event":"run","task_id":"t"}'
    expected = hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert signature("s3cret", body) == f"sha256={expected}"
    assert signature("s3cret", body + b" ") != signature("s3cret", body)
    assert signature("other", body) != signature("s3cret", body)


def test_the_recheck_summary_counts_each_result() -> None:
    def page(result: str, job: str | None = None) -> PageCheck:
        return PageCheck.model_validate(
            {"source_id": result, "url": f"https://x.test/{result}", "result": result, "status": 200,
             "reason": "r", "job_id": job}
        )  # fmt: skip

    listed = [
        page("not_modified"),
        page("not_modified"),
        page("same_hash"),
        page("changed", "job_1"),
        page("changed"),
        page("first_check"),
        page("failed"),
    ]
    summary = _summary(listed)
    assert (summary.checked, summary.unchanged, summary.not_modified, summary.same_hash) == (7, 3, 2, 1)
    assert (summary.changed, summary.first_check, summary.failed, summary.requeued) == (2, 1, 1, 1)
    assert _summary([]).checked == 0


def test_webhook_secrets_live_in_an_owner_only_file_and_the_graph_gets_a_fingerprint(tmp_path: Path) -> None:
    store = WebhookSecrets(tmp_path / "auth" / "webhooks.json")
    assert store.get("task_a") is None and store.drop_task("task_a") == 0
    store.put("task_a", "s3cret-a")
    store.put("task_b", "s3cret-b")
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert WebhookSecrets(store.path).get("task_a") == "s3cret-a"  # another process's view
    store.put("task_a", "rotated")
    assert json.loads(store.path.read_text()) == {"task_a": "rotated", "task_b": "s3cret-b"}
    assert store.drop_task("task_a") == 1 and store.get("task_a") is None and store.get("task_b") == "s3cret-b"
    assert fingerprint("s3cret-b") == hashlib.sha256(b"s3cret-b").hexdigest()[:8]
    assert fingerprint("s3cret-b") != fingerprint("s3cret-a") and "s3cret" not in fingerprint("s3cret-b")
