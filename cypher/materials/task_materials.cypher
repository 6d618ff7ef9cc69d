// mode: read
// get_materials in one round trip: per claim, alpha/beta aggregated from its stance edges (Beta(1,1) prior,
// SUPPORTS → alpha, REFUTES → beta, weight nli_confidence or 1.0 when human-corrected, NEUTRAL adds nothing),
// its evidence list (up to $evidence_limit items, strongest first) with the source page of each fragment,
// and the oldest/newest year over all of its evidence. Domain categories are reported, never weighed.
// Params: $task_id, $evidence_limit, $include_neutral, $include_not_adopted
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
WHERE $include_not_adopted OR coalesce(c.claim_adoption_status, 'adopted') = 'adopted'
CALL (c) {
  OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
  WITH r, f, type(r) AS rel,
       CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE toFloat(r.nli_confidence) END AS weight
  CALL (f) {
    OPTIONAL MATCH (f)-[:EXTRACTED_FROM]->(p:Page)
    RETURN p ORDER BY p.crawled_at, p.id LIMIT 1
  }
  WITH rel, weight, r, f, p
  ORDER BY CASE rel WHEN 'NEUTRAL' THEN 1 ELSE 0 END, weight DESC, r.id
  RETURN sum(CASE rel WHEN 'SUPPORTS' THEN weight ELSE 0.0 END) AS support_weight,
         sum(CASE rel WHEN 'REFUTES' THEN weight ELSE 0.0 END) AS refute_weight,
         count(CASE rel WHEN 'SUPPORTS' THEN 1 END) AS supports_count,
         count(CASE rel WHEN 'REFUTES' THEN 1 END) AS refutes_count,
         count(CASE rel WHEN 'NEUTRAL' THEN 1 END) AS neutral_count,
         min(p.year) AS oldest, max(p.year) AS newest,
         collect(CASE WHEN r IS NOT NULL AND ($include_neutral OR rel <> 'NEUTRAL') THEN {
           edge_id: r.id, relation: toLower(rel), fragment_id: f.id, source_id: p.id, url: p.url, title: p.title,
           year: p.year, doi: p.doi, venue: p.venue, nli_confidence: r.nli_confidence,
           source_domain_category: r.source_domain_category,
           edge_human_corrected: coalesce(r.edge_human_corrected, false)
         } END) AS evidence
}
RETURN c.id AS claim_id, c.text AS text, coalesce(c.claim_adoption_status, 'adopted') AS claim_adoption_status,
       c.claim_rejection_reason AS claim_rejection_reason,
       1.0 + support_weight AS alpha, 1.0 + refute_weight AS beta,
       supports_count, refutes_count, neutral_count, oldest, newest,
       size(evidence) AS evidence_available, evidence[..$evidence_limit] AS evidence
ORDER BY c.created_at, c.id
