// mode: read
// A task's webhook URL and its signing secret's fingerprint (no row: no such task), and a secret an older Lyra kept
// on the node (legacy_secret; moved to the state folder on first use: tasks/migrate_webhook_secret). Params: $task_id
MATCH (t:Task {id: $task_id})
RETURN t.webhook_url AS url, t.webhook_secret_fingerprint AS fingerprint, t.webhook_secret AS legacy_secret
