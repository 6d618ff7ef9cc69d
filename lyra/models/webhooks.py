"""A task's webhook: where Lyra POSTs a signed note after each run that moved its claims
(docs/concepts/living-evidence.md)."""

from __future__ import annotations

from pydantic import Field

from lyra.models.api import Request, Response, TaskRequest

SIGNATURE_HEADER = "X-Lyra-Signature"


class SetWebhookBody(Request):
    url: str | None = Field(
        default=None,
        min_length=1,
        max_length=2000,
        description="the http(s) URL to POST to after each run that moved the task's claims; null removes the "
        "webhook. A private, loopback or link-local address is refused unless LYRA_FETCH_ALLOW_HOSTS allows it "
        "(the fetcher's SSRF rules)",
    )
    rotate_secret: bool = Field(default=False, description="make a new signing secret (the old one stops working)")


class SetWebhookRequest(SetWebhookBody, TaskRequest):
    pass


class WebhookSetting(Response):
    task_id: str
    url: str | None = Field(description="the webhook now (null: none)")
    secret: str | None = Field(
        description="the HMAC-SHA256 key of the signature header, shown only when it was made (the first URL set, "
        "or rotate_secret); keep it: Lyra never shows it again"
    )
    secret_fingerprint: str | None = Field(
        default=None,
        description="the first 8 hex digits of the sha256 of the secret in force (null: no webhook): names the "
        "secret without revealing it; the task node keeps the same (webhook_secret_fingerprint), never the secret",
    )
    signature_header: str = Field(
        default=SIGNATURE_HEADER,
        description="the header carrying sha256=<hex HMAC-SHA256 of the raw body under the secret>",
    )
