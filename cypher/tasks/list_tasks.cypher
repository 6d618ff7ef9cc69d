// mode: read
// All tasks with their claim counts, newest first.
MATCH (t:Task)
RETURN t.id AS id, t.hypothesis AS hypothesis, t.status AS status, t.created_at AS created_at,
       COUNT { (t)-[:HAS_CLAIM]->(:Claim) } AS claims
ORDER BY t.created_at DESC
