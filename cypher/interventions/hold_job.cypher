// mode: write
// A running web job whose domain is paused for its task (an item of that task and domain is pending): the job
// waits too, without an item of its own, and is queued again when the domain's last pending item is resolved
// (interventions/resolve_intervention). Decided under the task's write lock, which resolving also takes first, so
// a domain unpaused meanwhile cannot leave the job waiting for nothing: with no pending item left the job goes back
// to the queue instead (its attempt is given back). Only the run holding the job (its claim) may do this.
// Params: $id (job), $claim, $domain, $error, $seconds
MATCH (j:Job {id: $id})
MATCH (t:Task {id: j.task_id})
CALL apoc.lock.nodes([t, j])
SET j.claim = CASE j.claim WHEN $claim THEN $claim + ':held' ELSE j.claim END
WITH t, j WHERE j.claim = $claim + ':held'
CALL (t) {
  RETURN COUNT { (t)-[:HAS_INTERVENTION]->(:Intervention {status: 'pending', domain: $domain}) } AS pending
}
SET j.state = CASE WHEN pending > 0 THEN 'waiting' ELSE 'queued' END,
    j.error = CASE WHEN pending > 0 THEN $error ELSE null END,
    j.attempts = CASE WHEN pending > 0 THEN j.attempts ELSE j.attempts - 1 END,
    j.paused_domain = CASE WHEN pending > 0 THEN $domain ELSE null END,
    j.waiting_on = null, j.claim = null, j.updated_at = datetime(),
    t.seconds_used = coalesce(t.seconds_used, 0.0) + $seconds, t.updated_at = datetime()
RETURN j.id AS id, j.state AS job_state, pending
