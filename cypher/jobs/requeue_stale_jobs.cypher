// mode: write
// Running jobs whose worker stopped beating (a crashed or restarted server) go back to the queue, or fail
// once they have used all their attempts. Their writes are idempotent, so running them again is safe.
// Several pools run this at once, alongside heartbeats and finishing runs, so each candidate is decided under
// its write lock by compare-and-set: a SET whose value reads the property it writes reads it afresh under the
// lock, and a value written in this transaction is what later reads see (a plain WHERE after the lock would
// reuse values the MATCH cached before it). The job must still be held by the run judged stale (its claim token:
// not finished, requeued or taken again meanwhile) and must still not have beaten.
// Params: $stale_seconds, $max_attempts, $token (unique to this call)
MATCH (j:Job {state: 'running'})
WHERE j.heartbeat_at < datetime() - duration({seconds: $stale_seconds})
WITH j, coalesce(j.claim, '') AS judged
CALL apoc.lock.nodes([j])
SET j.claim = CASE coalesce(j.claim, '') WHEN judged THEN $token ELSE j.claim END
WITH j, judged WHERE j.claim = $token
SET j.heartbeat_at = CASE WHEN j.heartbeat_at < datetime() - duration({seconds: $stale_seconds}) THEN null
                          ELSE j.heartbeat_at END
WITH j, judged, j.heartbeat_at IS NULL AS stale, j.attempts >= $max_attempts AS spent
SET j.state = CASE WHEN NOT stale THEN j.state WHEN spent THEN 'failed' ELSE 'queued' END,
    j.error = CASE WHEN stale AND spent
                   THEN 'interrupted ' + toString(j.attempts) + ' times (its worker stopped), not retried again'
                   ELSE j.error END,
    j.finished_at = CASE WHEN NOT stale THEN j.finished_at WHEN spent THEN datetime() ELSE null END,
    j.worker = CASE WHEN stale THEN null ELSE j.worker END,
    j.claim = CASE WHEN stale THEN null WHEN judged = '' THEN null ELSE judged END,
    j.updated_at = CASE WHEN stale THEN datetime() ELSE j.updated_at END
WITH j, stale WHERE stale
RETURN j.id AS id, j.state AS state
