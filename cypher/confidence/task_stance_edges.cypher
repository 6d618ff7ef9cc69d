// mode: read
// Every stance edge of a task's claims, row by row (the slow path the benchmark compares against).
// Params: $task_id
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)<-[r:SUPPORTS|REFUTES|NEUTRAL]-()
RETURN c.id AS claim_id, type(r) AS relation, r.nli_confidence AS nli_confidence,
       r.edge_human_corrected AS edge_human_corrected
