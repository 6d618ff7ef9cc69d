// mode: read
// Per claim, what get_materials lists beside the scores (no confidence math here: claim_scores.cypher does that):
// its text and adoption status; the oldest/newest publication year over all of its evidence pages; the facts source
// verification reads (distinct pages giving SUPPORTS, domains rejected as sources for a danger); how many items could
// be listed; and its evidence list, at most $evidence_limit items (SUPPORTS/REFUTES first, strongest first, then
// edge id), each with its fragment's first page (crawled_at, id). Domain categories are reported, never weighed.
// $evidence_limit = 0 lists no evidence.
// Each claim's edges are read once; each distinct fragment's pages once for the whole batch (a fragment judged
// against many claims is not expanded again per claim); beyond the sort keys, page and edge properties are read for the
// listed items only.
// Returns one row: `claims`, one list per claim (claim_id, text, claim_adoption_status, claim_rejection_reason,
// oldest, newest, supporting_pages, evidence_available, evidence, security_rejections), in no particular order.
// Params: $claim_ids, $evidence_limit, $include_neutral
UNWIND $claim_ids AS cid
MATCH (c:Claim {id: cid})
OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
WITH f, collect([c, r]) AS uses
CALL (f) {
  OPTIONAL MATCH (f)-[:EXTRACTED_FROM]->(p:Page)
  WITH p ORDER BY p.crawled_at, p.id
  RETURN collect(p) AS pages, min(p.year) AS oldest, max(p.year) AS newest
}
UNWIND uses AS use
WITH use[0] AS c, use[1] AS r, f, pages, oldest, newest
WITH c, r, f, pages, oldest, newest, type(r) AS relation,
     CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE toFloat(r.nli_confidence) END AS weight
ORDER BY CASE relation WHEN 'NEUTRAL' THEN 1 ELSE 0 END, weight DESC, r.id
WITH c, min(oldest) AS oldest, max(newest) AS newest,
     collect(CASE WHEN relation IS NOT NULL AND ($include_neutral OR relation <> 'NEUTRAL') THEN [r, f, pages[0]] END)
       AS listed,
     collect(CASE relation WHEN 'SUPPORTS' THEN pages END) AS supporting
CALL (supporting) {
  UNWIND supporting AS ps
  UNWIND ps AS p
  RETURN count(DISTINCT p) AS supporting_pages
}
WITH c, oldest, newest, supporting_pages, size(listed) AS available,
     // each item a list (edge_id, relation, fragment_id, source_id, url, title, year, doi, venue, nli_confidence,
     // source_domain_category, edge_human_corrected): maps cost the server and the driver more
     [x IN listed[..$evidence_limit] | [x[0].id, toLower(type(x[0])), x[1].id, x[2].id, x[2].url, x[2].title, x[2].year,
       x[2].doi, x[2].venue, x[0].nli_confidence, x[0].source_domain_category,
       coalesce(x[0].edge_human_corrected, false)]] AS evidence
// one row, one list per claim (collect() would drop the nulls of a column list)
RETURN collect([c.id, c.text, coalesce(c.claim_adoption_status, 'adopted'), c.claim_rejection_reason, oldest, newest,
                supporting_pages, available, evidence, COUNT { (c)-[:SOURCE_REJECTED]->(:Domain) }]) AS claims
