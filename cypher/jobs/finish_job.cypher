// mode: write
// Record how a running job ended (done | failed | cancelled) and charge its pages and seconds to the task's
// budget. Only the worker holding the job can finish it. When the task has no queued or running job left
// and was not stopped, it becomes 'completed'.
// Params: $id, $worker, $state, $error, $result (JSON string), $pages, $seconds
MATCH (j:Job {id: $id, worker: $worker, state: 'running'})
MATCH (t:Task {id: j.task_id})
SET j.state = $state, j.error = $error, j.result = $result, j.finished_at = datetime(), j.updated_at = datetime(),
    t.pages_used = coalesce(t.pages_used, 0) + $pages,
    t.seconds_used = coalesce(t.seconds_used, 0.0) + $seconds,
    t.updated_at = datetime()
WITH j, t
CALL (t) {
  RETURN COUNT { (t)-[:HAS_JOB]->(o:Job) WHERE o.state IN ['queued', 'running'] } AS active
}
SET t.status = CASE WHEN active = 0 AND t.status = 'running' THEN 'completed' ELSE t.status END
RETURN j.id AS id, j.state AS state, t.status AS task_status
