// mode: read
// How many stance edges a task's claims have: the judged pairs its budget (LYRA_TASK_PAIR_BUDGET) counts.
// Params: $task_id
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
RETURN coalesce(sum(COUNT { (c)<-[:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment) }), 0) AS edges
