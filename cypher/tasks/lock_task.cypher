// mode: write
// Take the task's write lock for the rest of the transaction (a SET locks the node until commit), so that adding
// claims reads the task's claims and writes the new ones without another writer in between: two concurrent adds
// of the same text make one claim. No row when the task does not exist.
// Params: $task_id
MATCH (t:Task {id: $task_id})
SET t.updated_at = datetime()
RETURN t.id AS task_id
