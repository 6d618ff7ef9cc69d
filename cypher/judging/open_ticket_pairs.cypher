// mode: read
// The (claim, fragment) pairs a task's unexpired tickets hold: out for judging, so not offered again.
// Params: $task_id
MATCH (t:JudgingTicket {task_id: $task_id})
WHERE t.expires_at > datetime()
RETURN t.claim_id AS claim_id, t.fragment_id AS fragment_id
