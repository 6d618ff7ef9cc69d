// mode: read
// One page of a task's claims in a stable order (created_at, then id), for get_materials' cursor: the claims after
// ($after_at, $after_id) — both null for the first page — at most $limit of them. One row: one [claim_id,
// created_at] list per claim (streaming one record per claim cost the driver more than the query; a claim written
// without created_at, by plain Cypher, comes last).
// Params: $task_id, $include_not_adopted, $after_at (ISO-8601 string or null), $after_id, $limit
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
WHERE ($include_not_adopted OR coalesce(c.claim_adoption_status, 'adopted') = 'adopted')
  AND ($after_id IS NULL OR c.created_at > datetime($after_at)
       OR (c.created_at = datetime($after_at) AND c.id > $after_id))
WITH c
ORDER BY c.created_at, c.id
LIMIT $limit
RETURN collect([c.id, toString(c.created_at)]) AS claims
