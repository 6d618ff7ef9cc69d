// mode: read
// Beta(1,1) prior updated by the claim's stance edges, aggregated inside Neo4j (seed 003 §6.2).
// SUPPORTS adds its weight to alpha, REFUTES to beta, NEUTRAL adds nothing. The weight is nli_confidence,
// or 1.0 for a human-corrected edge. Domain categories are deliberately not read.
// Params: $task_id
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
CALL (c) {
  OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-()
  WITH type(r) AS rel,
       CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE toFloat(r.nli_confidence) END AS weight
  RETURN sum(CASE rel WHEN 'SUPPORTS' THEN weight ELSE 0.0 END) AS support_weight,
         sum(CASE rel WHEN 'REFUTES' THEN weight ELSE 0.0 END) AS refute_weight,
         count(CASE rel WHEN 'SUPPORTS' THEN 1 END) AS supports_count,
         count(CASE rel WHEN 'REFUTES' THEN 1 END) AS refutes_count,
         count(CASE rel WHEN 'NEUTRAL' THEN 1 END) AS neutral_count
}
RETURN c.id AS claim_id, c.text AS text, c.claim_adoption_status AS claim_adoption_status,
       1.0 + support_weight AS alpha, 1.0 + refute_weight AS beta,
       supports_count, refutes_count, neutral_count
ORDER BY c.created_at, c.id
