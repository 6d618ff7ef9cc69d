// mode: read
// Evidence timeline: per publication year of the evidence pages, how many edges support or refute each claim.
// Params: $task_id
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)<-[r:SUPPORTS|REFUTES]-(:Fragment)-[:EXTRACTED_FROM]->(p:Page)
WITH c, p.year AS year, r
RETURN c.id AS claim_id, year,
       count(DISTINCT CASE type(r) WHEN 'SUPPORTS' THEN r END) AS supports,
       count(DISTINCT CASE type(r) WHEN 'REFUTES' THEN r END) AS refutes
ORDER BY claim_id, year
