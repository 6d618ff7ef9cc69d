// mode: read
// A task's refresh schedule (cypher/schedule/set_refresh writes it); every is null when it has none. No row: no
// such task. Params: $task_id
MATCH (t:Task {id: $task_id})
RETURN t.id AS task_id, t.refresh_every AS every, t.refresh_every_seconds AS every_seconds,
       t.refresh_max_targets AS max_targets, t.refresh_max_pages AS max_pages,
       toString(t.refresh_next_at) AS next_run_at, toString(t.refresh_last_at) AS last_run_at
