// mode: write
// A running web job met a CAPTCHA, login or consent wall: the job waits for a person (state 'waiting', not failed)
// and the task's intervention item for it is opened, in one transaction, so nobody can resolve an item whose job is
// still running. Only the run holding the job may park it (its claim token is compared and set under the job's
// write lock, as in jobs/finish_job). One item per job: a job that meets a wall again (after a retry) reopens its
// item (attempts + 1; the last resolution stays readable). The job's seconds are charged to the task.
// Params: $id (job), $claim, $new_id (the item's id when it is new), $url, $domain, $kind, $reason, $error,
//         $result (JSON string), $seconds
MATCH (j:Job {id: $id})
CALL apoc.lock.nodes([j])
SET j.claim = CASE j.claim WHEN $claim THEN $claim + ':parked' ELSE j.claim END
WITH j WHERE j.claim = $claim + ':parked'
MATCH (t:Task {id: j.task_id})
MERGE (i:Intervention {job_id: j.id})
  ON CREATE SET i.id = $new_id, i.task_id = j.task_id, i.created_at = datetime(), i.attempts = 0
SET i.url = $url, i.domain = $domain, i.kind = $kind, i.reason = $reason, i.status = 'pending',
    i.attempts = i.attempts + 1, i.updated_at = datetime(),
    j.state = 'waiting', j.error = $error, j.result = $result, j.claim = null, j.finished_at = null,
    j.paused_domain = $domain, j.waiting_on = i.id, j.updated_at = datetime(),
    t.seconds_used = coalesce(t.seconds_used, 0.0) + $seconds, t.updated_at = datetime()
MERGE (t)-[:HAS_INTERVENTION]->(i)
MERGE (i)-[:FOR_JOB]->(j)
RETURN i.id AS id, i.attempts AS attempts, j.state AS job_state
