// mode: read
// The texts of some claims of a task. Params: $task_id, $claim_ids
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
WHERE c.id IN $claim_ids
RETURN c.id AS claim_id, c.text AS text
