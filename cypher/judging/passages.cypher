// mode: read
// The passages of a batch of judging items: each fragment's text and the page the task read it on (the first by
// id; else any page carrying it), with its URL, title and domain category. Params: $task_id, $fragment_ids
UNWIND $fragment_ids AS fid
MATCH (f:Fragment {id: fid})
CALL (f) {
  OPTIONAL MATCH (f)-[:EXTRACTED_FROM]->(p:Page)
  WITH p, EXISTS { (:Task {id: $task_id})-[:READ]->(p) } AS read
  ORDER BY read DESC, p.id
  LIMIT 1
  OPTIONAL MATCH (p)-[:IN_DOMAIN]->(d:Domain)
  RETURN p, d
}
RETURN f.id AS fragment_id, f.text AS text, p.url AS url, p.title AS title,
       coalesce(d.domain_category, p.domain_category) AS domain_category
