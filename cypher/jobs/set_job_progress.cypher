// mode: write
// A running job's progress (its stage and counters, a JSON string), written by the run holding it (matched by its
// claim token, as in heartbeat_jobs.cypher); it counts as a heartbeat. Returns whether a stop asked it to cancel.
// Params: $id, $claim, $progress
MATCH (j:Job {id: $id, claim: $claim, state: 'running'})
SET j.progress = $progress, j.heartbeat_at = datetime(), j.updated_at = datetime()
RETURN j.id AS id, coalesce(j.cancel_requested, false) AS cancel_requested
