// mode: write
// A worker's running jobs are still alive; returns whether a stop asked each of them to cancel.
// Params: $worker, $ids
UNWIND $ids AS jid
MATCH (j:Job {id: jid, worker: $worker, state: 'running'})
SET j.heartbeat_at = datetime()
RETURN j.id AS id, coalesce(j.cancel_requested, false) AS cancel_requested
