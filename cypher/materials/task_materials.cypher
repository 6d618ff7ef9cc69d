// mode: read
// get_materials in one round trip, and the only statement that computes claim confidence. Per claim: alpha/beta
// aggregated from all of its stance edges (Beta(1,1) prior, SUPPORTS → alpha, REFUTES → beta, weight
// nli_confidence or 1.0 when human-corrected, NEUTRAL adds nothing); the oldest/newest publication year over all
// of its evidence pages; and its evidence list, at most $evidence_limit items, SUPPORTS/REFUTES first and
// strongest first, each with its fragment's first page; and the facts source verification reads (distinct pages
// giving SUPPORTS, domains rejected as sources for a danger).
// Domain categories are reported, never weighed.
// $evidence_limit = 0 lists no evidence (scores only; the counts and numbers still use every edge).
// $claim_ids (null = all) lets a large task be computed in a few parallel parts.
// Params: $task_id, $claim_ids, $evidence_limit, $include_neutral, $include_not_adopted
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
WHERE ($claim_ids IS NULL OR c.id IN $claim_ids)
  AND ($include_not_adopted OR coalesce(c.claim_adoption_status, 'adopted') = 'adopted')
CALL (c) {
  OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
  WITH r, f, type(r) AS rel,
       CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE toFloat(r.nli_confidence) END AS weight
  ORDER BY CASE rel WHEN 'NEUTRAL' THEN 1 ELSE 0 END, weight DESC, r.id
  WITH sum(CASE rel WHEN 'SUPPORTS' THEN weight ELSE 0.0 END) AS support_weight,
       sum(CASE rel WHEN 'REFUTES' THEN weight ELSE 0.0 END) AS refute_weight,
       count(CASE rel WHEN 'SUPPORTS' THEN 1 END) AS supports_count,
       count(CASE rel WHEN 'REFUTES' THEN 1 END) AS refutes_count,
       count(CASE rel WHEN 'NEUTRAL' THEN 1 END) AS neutral_count,
       collect(CASE WHEN r IS NOT NULL AND ($include_neutral OR rel <> 'NEUTRAL') THEN [r, f] END) AS pairs,
       collect(DISTINCT f) AS fragments,
       collect(DISTINCT CASE rel WHEN 'SUPPORTS' THEN f END) AS supporting
  CALL (fragments, supporting) {
    UNWIND fragments AS x
    MATCH (x)-[:EXTRACTED_FROM]->(p:Page)
    RETURN min(p.year) AS oldest, max(p.year) AS newest,
           count(DISTINCT CASE WHEN x IN supporting THEN p END) AS supporting_pages
  }
  RETURN support_weight, refute_weight, supports_count, refutes_count, neutral_count, oldest, newest,
         supporting_pages,
         size(pairs) AS evidence_available, pairs[..$evidence_limit] AS top
}
CALL (top) {
  UNWIND top AS pair
  WITH pair[0] AS r, pair[1] AS f
  CALL (f) {
    OPTIONAL MATCH (f)-[:EXTRACTED_FROM]->(p:Page)
    RETURN p ORDER BY p.crawled_at, p.id LIMIT 1
  }
  RETURN collect({edge_id: r.id, relation: toLower(type(r)), fragment_id: f.id, source_id: p.id, url: p.url,
                  title: p.title, year: p.year, doi: p.doi, venue: p.venue, nli_confidence: r.nli_confidence,
                  source_domain_category: r.source_domain_category,
                  edge_human_corrected: coalesce(r.edge_human_corrected, false)}) AS evidence
}
RETURN c.id AS claim_id, c.text AS text, coalesce(c.claim_adoption_status, 'adopted') AS claim_adoption_status,
       c.claim_rejection_reason AS claim_rejection_reason,
       1.0 + support_weight AS alpha, 1.0 + refute_weight AS beta,
       supports_count, refutes_count, neutral_count, oldest, newest, evidence_available, evidence,
       supporting_pages, COUNT { (c)-[:SOURCE_REJECTED]->(:Domain) } AS security_rejections
ORDER BY c.created_at, c.id
