// mode: read
// Claim evidence summary: each claim of a task with its supporting, refuting and neutral edge counts and weights.
// Params: $task_id
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment)
WITH c,
     count(CASE type(r) WHEN 'SUPPORTS' THEN 1 END) AS supports,
     count(CASE type(r) WHEN 'REFUTES' THEN 1 END) AS refutes,
     count(CASE type(r) WHEN 'NEUTRAL' THEN 1 END) AS neutral,
     sum(CASE type(r) WHEN 'SUPPORTS' THEN r.nli_confidence ELSE 0.0 END) AS support_weight,
     sum(CASE type(r) WHEN 'REFUTES' THEN r.nli_confidence ELSE 0.0 END) AS refute_weight
ORDER BY c.created_at, c.id
RETURN c.id AS claim_id, c.text AS claim, c.claim_adoption_status AS claim_adoption_status,
       supports, refutes, neutral, support_weight, refute_weight
