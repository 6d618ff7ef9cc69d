// mode: read
// Every judged (fragment text, claim text) pair of a task (the pipeline benchmark re-judges them).
// Params: $task_id
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)<-[:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
RETURN f.text AS premise, c.text AS hypothesis
