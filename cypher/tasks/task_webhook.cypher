// mode: read
// A task's webhook URL and signing secret (no row: no such task). Params: $task_id
MATCH (t:Task {id: $task_id})
RETURN t.webhook_url AS url, t.webhook_secret AS secret
