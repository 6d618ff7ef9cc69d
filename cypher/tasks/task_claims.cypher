// mode: read
// The claims of a task (id and text), oldest first.
// Params: $task_id
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
RETURN c.id AS claim_id, c.text AS text
ORDER BY c.created_at, c.id
