// mode: write
// A task's webhook (docs/concepts/living-evidence.md): the URL Lyra POSTs to after each run that moved the task's
// claims, and the fingerprint of its signing secret (the first 8 hex digits of its sha256; the secret itself is kept
// in the state folder, never in the graph). $url null removes both; $fingerprint null keeps the one the task has.
// A secret an older Lyra kept on the node is removed (lyra.services.webhooks moved it to the file first).
// Returns the URL and the fingerprint now. Params: $task_id, $url, $fingerprint
MATCH (t:Task {id: $task_id})
SET t.webhook_url = $url,
    t.webhook_secret_fingerprint = CASE WHEN $url IS NULL THEN null
                                        ELSE coalesce($fingerprint, t.webhook_secret_fingerprint) END,
    t.webhook_set_at = CASE WHEN $url IS NULL THEN null ELSE datetime() END
REMOVE t.webhook_secret
RETURN t.webhook_url AS url, t.webhook_secret_fingerprint AS fingerprint
