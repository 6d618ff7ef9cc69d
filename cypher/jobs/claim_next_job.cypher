// mode: write
// Take the oldest queued job for this worker: locked, re-checked, then marked running (attempts + 1).
// Returns no row when nothing is queued or another worker took it first.
// Params: $worker
MATCH (j:Job {state: 'queued'})
WITH j ORDER BY j.created_at, j.id LIMIT 1
CALL apoc.lock.nodes([j])
WITH j WHERE j.state = 'queued'
SET j.state = 'running', j.attempts = j.attempts + 1, j.worker = $worker, j.started_at = datetime(),
    j.heartbeat_at = datetime(), j.updated_at = datetime(), j.cancel_requested = false
RETURN j.id AS id, j.task_id AS task_id, j.kind AS kind, j.value AS value, j.options AS options,
       j.attempts AS attempts
