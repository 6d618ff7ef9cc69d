"""Webhook signing and the freshness summary, without Neo4j or a network."""

from __future__ import annotations

import hashlib
import hmac

from lyra.models.refresh import PageCheck
from lyra.services.freshness import _summary
from lyra.services.webhooks import signature


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
