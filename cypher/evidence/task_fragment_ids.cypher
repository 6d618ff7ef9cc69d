// mode: read
// Ids of the fragments a task's claims reach through stance edges (to restrict similarity search to a task).
// Params: $task_id
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(:Claim)<-[:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
RETURN collect(DISTINCT f.id) AS ids
