// mode: read
// Claims (of one task, or all when $task_id is null) whose embedding has not been computed yet.
// Params: $task_id, $limit
MATCH (c:Claim)
WHERE ($task_id IS NULL OR c.task_id = $task_id) AND c.embedding IS NULL
RETURN c.id AS id, c.text AS text
LIMIT $limit
