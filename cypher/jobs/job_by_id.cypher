// mode: read
// One job by id: how far it is (progress) or how it ended (state, error, result), and who ran it.
// Params: $id
MATCH (j:Job {id: $id})
RETURN j.id AS id, j.task_id AS task_id, j.kind AS kind, j.value AS value, j.state AS state,
       j.attempts AS attempts, j.error AS error, j.result AS result, j.progress AS progress,
       coalesce(j.workers, []) AS workers, j.created_at AS created_at, j.started_at AS started_at,
       j.finished_at AS finished_at
