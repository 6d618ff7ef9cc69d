// mode: read
// Claims with their embeddings (of one task, or all when $task_id is null), for similarity search.
// Params: $task_id, $limit
MATCH (c:Claim)
WHERE ($task_id IS NULL OR c.task_id = $task_id) AND c.embedding IS NOT NULL
RETURN c.id AS id, c.task_id AS task_id, c.text AS text, c.embedding AS embedding
LIMIT $limit
