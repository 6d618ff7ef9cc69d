// mode: read
// A task's jobs, oldest first (one request's targets in the order given) (get_status detail=full), with the
// worker that ran each attempt.
// Params: $task_id
MATCH (:Task {id: $task_id})-[:HAS_JOB]->(j:Job)
RETURN j.id AS id, j.kind AS kind, j.value AS value, j.state AS state, j.attempts AS attempts, j.error AS error,
       j.result AS result, coalesce(j.workers, []) AS workers, j.created_at AS created_at,
       j.started_at AS started_at, j.finished_at AS finished_at
ORDER BY j.created_at, coalesce(j.queue_seq, 0), j.id
