// mode: read
// When a run of the task started (no row: no such run of this task). Params: $task_id, $run_id
MATCH (r:Run {id: $run_id, task_id: $task_id})
RETURN toString(r.started_at) AS started_at
