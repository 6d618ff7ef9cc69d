// mode: read
// Reference candidates: pages cited by the task's evidence pages that hold no fragment yet (not fetched).
// Params: $task_id
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(:Claim)<-[:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment)-[:EXTRACTED_FROM]->(src:Page)
MATCH (src)-[x:CITES]->(ref:Page)
WHERE NOT EXISTS { (ref)<-[:EXTRACTED_FROM]-(:Fragment) }
RETURN ref.id AS page_id, ref.url AS url, ref.doi AS doi, ref.title AS title, ref.year AS year,
       count(DISTINCT src) AS cited_by, collect(DISTINCT x.citation_source) AS citation_sources
ORDER BY cited_by DESC, year DESC
