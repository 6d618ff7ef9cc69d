// mode: write
// Record how a running job ended (done | failed | cancelled) and charge its pages and seconds to the task's
// budget (a job waiting for a person counts as active: the task is not completed under it). Only the run holding the job can finish it: under the job's write lock its claim token is compared
// and set (a SET reads the property it writes afresh), so a job requeued in the meantime, and perhaps taken by
// another worker, is not touched. When the task has no queued or running job left and was not stopped, it
// becomes 'completed'.
// Params: $id, $claim, $state, $error, $result (JSON string), $pages, $seconds
MATCH (j:Job {id: $id})
CALL apoc.lock.nodes([j])
SET j.claim = CASE j.claim WHEN $claim THEN $claim + ':finished' ELSE j.claim END
WITH j WHERE j.claim = $claim + ':finished'
OPTIONAL MATCH (t:Task {id: j.task_id}) // none for a job of the service (enqueue_service_job): nothing to charge
SET j.state = $state, j.error = $error, j.result = $result, j.finished_at = datetime(), j.updated_at = datetime(),
    j.claim = null,
    t.pages_used = coalesce(t.pages_used, 0) + $pages,
    t.seconds_used = coalesce(t.seconds_used, 0.0) + $seconds,
    t.updated_at = datetime()
WITH j, t
CALL (t) {
  RETURN COUNT { (t)-[:HAS_JOB]->(o:Job) WHERE o.state IN ['queued', 'running', 'waiting'] } AS active
}
SET t.status = CASE WHEN active = 0 AND t.status = 'running' THEN 'completed' ELSE t.status END
RETURN j.id AS id, j.state AS state, t.status AS task_status
