// mode: write
// Running jobs whose worker stopped beating (a crashed or restarted server) go back to the queue, or fail
// once they have used all their attempts. Their writes are idempotent, so running them again is safe.
// Params: $stale_seconds, $max_attempts
MATCH (j:Job {state: 'running'})
WHERE j.heartbeat_at < datetime() - duration({seconds: $stale_seconds})
SET j.state = CASE WHEN j.attempts >= $max_attempts THEN 'failed' ELSE 'queued' END,
    j.error = CASE WHEN j.attempts >= $max_attempts
                   THEN 'interrupted ' + toString(j.attempts) + ' times (its worker stopped), not retried again'
                   ELSE j.error END,
    j.finished_at = CASE WHEN j.attempts >= $max_attempts THEN datetime() ELSE null END,
    j.worker = null, j.updated_at = datetime()
RETURN j.id AS id, j.state AS state
