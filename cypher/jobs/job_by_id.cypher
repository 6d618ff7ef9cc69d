// mode: read
// One job by id (state and error, to report how it ended).
// Params: $id
MATCH (j:Job {id: $id})
RETURN j.id AS id, j.task_id AS task_id, j.kind AS kind, j.value AS value, j.state AS state,
       j.attempts AS attempts, j.error AS error, j.result AS result
