// mode: write
// Running jobs whose worker stopped beating (a crashed or restarted server) go back to the queue, or fail
// once they have used all their attempts. Their writes are idempotent, so running them again is safe.
// Several pools run this at once, alongside heartbeats, finishing runs and claims, so each candidate is decided
// under its write lock by compare-and-set: a SET whose value reads the property it writes reads it afresh under
// the lock, and what this transaction wrote is what later reads see (a plain WHERE after the lock would reuse the
// values the MATCH cached before it). The job must still be running (not finished or requeued by another pool
// meanwhile: its state is swapped for $token) and must still not have beaten (a job requeued and taken again
// since has a fresh heartbeat); otherwise it is put back as it was.
// Params: $stale_seconds, $max_attempts, $token (unique to this call)
MATCH (j:Job {state: 'running'})
WHERE j.heartbeat_at < datetime() - duration({seconds: $stale_seconds})
CALL apoc.lock.nodes([j])
SET j.state = CASE j.state WHEN 'running' THEN $token ELSE j.state END
WITH j WHERE j.state = $token
SET j.heartbeat_at = CASE WHEN j.heartbeat_at < datetime() - duration({seconds: $stale_seconds}) THEN null
                          ELSE j.heartbeat_at END
WITH j, j.heartbeat_at IS NULL AS stale, j.attempts >= $max_attempts AS spent
SET j.state = CASE WHEN NOT stale THEN 'running' WHEN spent THEN 'failed' ELSE 'queued' END,
    j.error = CASE WHEN stale AND spent
                   THEN 'interrupted ' + toString(j.attempts) + ' times (its worker stopped), not retried again'
                   ELSE j.error END,
    j.finished_at = CASE WHEN NOT stale THEN j.finished_at WHEN spent THEN datetime() ELSE null END,
    j.worker = CASE WHEN stale THEN null ELSE j.worker END,
    j.claim = CASE WHEN stale THEN null ELSE j.claim END,
    j.updated_at = CASE WHEN stale THEN datetime() ELSE j.updated_at END
WITH j, stale WHERE stale
RETURN j.id AS id, j.state AS state
