// mode: read
// Per claim, what get_materials lists beside the scores (no confidence math here: claim_scores.cypher does that):
// its text and adoption status; the oldest/newest publication year over all of its evidence pages; the facts source verification reads
// (distinct pages giving SUPPORTS, domains rejected as sources for a danger); how many items could be listed; and
// its evidence list, at most $evidence_limit items (top-k inside the subquery: SUPPORTS/REFUTES first, strongest
// first, then edge id), each with its fragment's first page. Domain categories are reported, never weighed.
// $evidence_limit = 0 lists no evidence.
// Params: $claim_ids, $evidence_limit, $include_neutral
UNWIND $claim_ids AS cid
MATCH (c:Claim {id: cid})
CALL (c) {
  OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
  RETURN collect(DISTINCT f) AS fragments, collect(DISTINCT CASE type(r) WHEN 'SUPPORTS' THEN f END) AS supporting,
         count(CASE WHEN $include_neutral OR type(r) <> 'NEUTRAL' THEN r END) AS evidence_available
}
CALL (fragments, supporting) {
  UNWIND fragments AS x
  MATCH (x)-[:EXTRACTED_FROM]->(p:Page)
  RETURN min(p.year) AS oldest, max(p.year) AS newest,
         count(DISTINCT CASE WHEN x IN supporting THEN p END) AS supporting_pages
}
CALL (c) {
  OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
  WHERE $evidence_limit > 0 AND ($include_neutral OR type(r) <> 'NEUTRAL')
  WITH r, f, CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE toFloat(r.nli_confidence) END AS weight
  ORDER BY CASE type(r) WHEN 'NEUTRAL' THEN 1 ELSE 0 END, weight DESC, r.id
  LIMIT $evidence_limit
  WITH r, f, COLLECT { MATCH (f)-[:EXTRACTED_FROM]->(p:Page) RETURN p ORDER BY p.crawled_at, p.id LIMIT 1 }[0] AS p
  RETURN collect(CASE WHEN r IS NOT NULL THEN
           {edge_id: r.id, relation: toLower(type(r)), fragment_id: f.id, source_id: p.id, url: p.url,
            title: p.title, year: p.year, doi: p.doi, venue: p.venue, nli_confidence: r.nli_confidence,
            source_domain_category: r.source_domain_category,
            edge_human_corrected: coalesce(r.edge_human_corrected, false)} END) AS evidence
}
RETURN c.id AS claim_id, c.text AS text, coalesce(c.claim_adoption_status, 'adopted') AS claim_adoption_status,
       c.claim_rejection_reason AS claim_rejection_reason, oldest, newest, supporting_pages, evidence_available, evidence,
       COUNT { (c)-[:SOURCE_REJECTED]->(:Domain) } AS security_rejections
