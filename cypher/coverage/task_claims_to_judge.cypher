// mode: read
// A task's claims as the judge needs them: text, the fragments an extracted claim came from (never judged against
// it: a claim does not support itself) and the fragments it already has a stance edge from, with the edge's type (never judged again).
// Params: $task_id
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
RETURN c.id AS claim_id, c.text AS text,
       COLLECT { MATCH (c)-[:EXTRACTED_FROM]->(s:Fragment) RETURN s.id } AS source_ids,
       COLLECT { MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment) RETURN [f.id, type(r)] } AS judged
ORDER BY c.created_at, c.id
