// mode: read
// Domain statistics: per domain of the task's evidence, its category and how its edges split by relation.
// Params: $task_id
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(:Claim)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
MATCH (f)-[:EXTRACTED_FROM]->(:Page)-[:IN_DOMAIN]->(d:Domain)
WITH d, r
RETURN d.name AS domain, d.domain_category AS domain_category,
       count(DISTINCT r) AS edges,
       count(DISTINCT CASE type(r) WHEN 'SUPPORTS' THEN r END) AS supports,
       count(DISTINCT CASE type(r) WHEN 'REFUTES' THEN r END) AS refutes,
       count(DISTINCT CASE type(r) WHEN 'NEUTRAL' THEN r END) AS neutral
ORDER BY edges DESC, domain
