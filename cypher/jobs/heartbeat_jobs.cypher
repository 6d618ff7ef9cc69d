// mode: write
// A worker's running jobs are still alive; returns whether a stop asked each of them to cancel. A job is matched
// by the claim token of the run that holds it, so a run that was requeued and taken again elsewhere is not kept
// alive by the old one.
// Params: $rows = [{id, claim}]
UNWIND $rows AS row
MATCH (j:Job {id: row.id, claim: row.claim, state: 'running'})
SET j.heartbeat_at = datetime()
RETURN j.id AS id, coalesce(j.cancel_requested, false) AS cancel_requested
