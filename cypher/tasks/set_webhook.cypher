// mode: write
// A task's webhook (docs/concepts/living-evidence.md): the URL Lyra POSTs to after each run that moved the task's
// claims, and the secret of its HMAC-SHA256 signature. $url null removes both; $secret null keeps the one the task
// has. Returns the URL now and whether a secret is kept. Params: $task_id, $url, $secret
MATCH (t:Task {id: $task_id})
SET t.webhook_url = $url,
    t.webhook_secret = CASE WHEN $url IS NULL THEN null ELSE coalesce($secret, t.webhook_secret) END,
    t.webhook_set_at = CASE WHEN $url IS NULL THEN null ELSE datetime() END
RETURN t.webhook_url AS url, t.webhook_secret IS NOT NULL AS has_secret
