// mode: read
// A task's runs, newest first; with $since (an ISO datetime) only those that started at or after it.
// Params: $task_id, $since, $limit
MATCH (r:Run {task_id: $task_id})
  WHERE $since IS NULL OR r.started_at >= datetime($since)
RETURN r.id AS run_id, r.kind AS kind, r.cause_id AS cause_id, toString(r.started_at) AS started_at,
       toString(r.finished_at) AS finished_at, coalesce(r.claims_moved, 0) AS claims_moved
ORDER BY r.finished_at DESC, r.id DESC
LIMIT $limit
