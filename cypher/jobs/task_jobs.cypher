// mode: read
// A task's jobs, oldest first (one request's targets in the order given) (get_status detail=full), with the
// worker that ran each attempt. Besides the jobs the task holds (HAS_JOB), its scheduled refreshes: `task_refresh`
// jobs are jobs of the service (enqueue_service_job: no task_id, no HAS_JOB, so they charge no budget and do not
// keep the task running) keyed 'refresh:' + the task's id while queued or running and 'refresh:<task>:<job id>'
// once a later one was queued (lyra/services/schedule.py refresh_key); both keys are read through the key's
// unique index.
// Params: $task_id
CALL () {
  MATCH (:Task {id: $task_id})-[:HAS_JOB]->(j:Job)
  RETURN j
  UNION
  MATCH (j:Job {key: 'refresh:' + $task_id})
  WHERE j.kind = 'task_refresh'
  RETURN j
  UNION
  MATCH (j:Job)
  WHERE j.key STARTS WITH 'refresh:' + $task_id + ':' AND j.kind = 'task_refresh'
  RETURN j
}
RETURN j.id AS id, j.kind AS kind, j.value AS value, j.state AS state, j.attempts AS attempts, j.error AS error,
       j.result AS result, coalesce(j.workers, []) AS workers, j.created_at AS created_at,
       j.started_at AS started_at, j.finished_at AS finished_at
ORDER BY j.created_at, coalesce(j.queue_seq, 0), j.id
