// mode: write
// A webhook secret an older Lyra kept on the task node, now in the state folder (lyra.services.webhooks): the node
// keeps only its fingerprint (the first 8 hex digits of its sha256). Params: $task_id, $fingerprint
MATCH (t:Task {id: $task_id})
WHERE t.webhook_secret IS NOT NULL
SET t.webhook_secret_fingerprint = $fingerprint
REMOVE t.webhook_secret
RETURN t.id AS task_id
