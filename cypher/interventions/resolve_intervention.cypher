// mode: write
// A person resolved a pending item: retry or cookie queue its job again (attempts reset), skip ends the job as
// 'skipped' with the note. When it was the last pending item of its task and domain, the domain is unpaused: the
// task's jobs held for that domain are queued again. The task's write lock is taken first (as in
// interventions/hold_job), and the item's state is compared and set under its own lock (a SET that reads the
// property it writes), so two resolutions of one item cannot both apply: the second gets no row.
// Params: $task_id, $id, $token (unique to this call), $status ('resolved' | 'skipped'), $action, $resolver, $note
MATCH (t:Task {id: $task_id})
CALL apoc.lock.nodes([t])
MATCH (t)-[:HAS_INTERVENTION]->(i:Intervention {id: $id})
CALL apoc.lock.nodes([i])
SET i.status = CASE i.status WHEN 'pending' THEN $token ELSE i.status END
WITH t, i WHERE i.status = $token
SET i.status = $status, i.action = $action, i.resolver = $resolver, i.note = $note, i.resolved_at = datetime(),
    i.updated_at = datetime()
WITH t, i
CALL (i) {
  OPTIONAL MATCH (i)-[:FOR_JOB]->(j:Job {state: 'waiting'})
  SET j.state = CASE $action WHEN 'skip' THEN 'skipped' ELSE 'queued' END,
      j.error = CASE $action WHEN 'skip' THEN 'skipped by a person: ' + coalesce($note, i.kind + ' at ' + i.domain)
                ELSE null END,
      j.attempts = CASE $action WHEN 'skip' THEN j.attempts ELSE 0 END,
      j.finished_at = CASE $action WHEN 'skip' THEN datetime() ELSE null END,
      j.paused_domain = null, j.waiting_on = null, j.updated_at = datetime()
  RETURN j.id AS job_id, j.state AS job_state
}
CALL (t, i) {
  WITH t, i WHERE NOT EXISTS { (t)-[:HAS_INTERVENTION]->(:Intervention {status: 'pending', domain: i.domain}) }
  MATCH (t)-[:HAS_JOB]->(h:Job {state: 'waiting', paused_domain: i.domain})
  WHERE h.waiting_on IS NULL
  SET h.state = 'queued', h.attempts = 0, h.error = null, h.paused_domain = null, h.updated_at = datetime()
  RETURN count(h) AS released
}
CALL (t, i) {
  RETURN COUNT { (t)-[:HAS_INTERVENTION]->(:Intervention {status: 'pending', domain: i.domain}) } AS domain_pending,
         COUNT { (t)-[:HAS_JOB]->(o:Job) WHERE o.state IN ['queued', 'running', 'waiting'] } AS active,
         COUNT { (t)-[:HAS_JOB]->(q:Job {state: 'queued'}) } AS queued
}
SET t.status = CASE WHEN queued > 0 THEN 'running'
                    WHEN active = 0 AND t.status = 'running' THEN 'completed' ELSE t.status END,
    t.stop_requested = CASE WHEN queued > 0 THEN null ELSE t.stop_requested END,
    t.updated_at = datetime()
RETURN i.id AS id, i.status AS status, i.domain AS domain, job_id, job_state, released, domain_pending,
       t.status AS task_status
