// mode: read
// Per claim, what get_materials lists beside the scores (no confidence math here: claim_scores.cypher does that):
// its text and adoption status; the oldest/newest publication year over its evidence pages; the sources behind its
// SUPPORTS edges (for independent_sources); the domains rejected as sources for a danger; how many items could be
// listed; the coverage of its candidate pairs (set by the last ranking, see coverage/set_claim_coverage); and its
// evidence list, at most $evidence_limit items (SUPPORTS/REFUTES first, strongest first, then edge id).
// Provenance is per task: an item names only pages that the claim's own task READ ((Task)-[:READ]->(Page)), never a
// page another task read that happens to carry the same fragment (an exact copy, the same PDF from disk and over
// HTTP). Domain categories are reported, never weighed. $evidence_limit = 0 lists no evidence.
// Each claim's edges are read once; each distinct (fragment, task) pair's pages once for the whole batch; beyond the
// sort keys, page, fragment and edge properties are read for the listed items only.
// Returns one row: `claims`, one list per claim (claim_id, text, claim_adoption_status, claim_rejection_reason,
// oldest, newest, supporting, evidence_available, evidence, security_rejections, coverage, extracted), in no
// particular order; extracted: the claim was drawn from source passages (it has EXTRACTED_FROM edges).
// supporting: one [fragment_id, [[page_id, doi, title, year], ...]] per SUPPORTS edge.
// Params: $claim_ids, $evidence_limit, $include_neutral, $pages_per_item
UNWIND $claim_ids AS cid
MATCH (c:Claim {id: cid})
OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
WITH f, c.task_id AS tid, collect([c, r]) AS uses
CALL (f, tid) {
  OPTIONAL MATCH (t:Task {id: tid})
  OPTIONAL MATCH (f)-[:EXTRACTED_FROM]->(p:Page)
    WHERE (t)-[:READ]->(p)
  WITH p ORDER BY p.crawled_at, p.id
  RETURN collect(p) AS pages, min(p.year) AS oldest, max(p.year) AS newest
}
UNWIND uses AS use
WITH use[0] AS c, use[1] AS r, f, pages, oldest, newest
WITH c, r, f, pages, oldest, newest, type(r) AS relation,
     CASE WHEN (r.retracted = true OR r.superseded = true) THEN 0.0 WHEN r.edge_human_corrected = true THEN 1.0
          ELSE toFloat(r.nli_confidence) END AS weight
ORDER BY CASE relation WHEN 'NEUTRAL' THEN 1 ELSE 0 END, weight DESC, r.id
WITH c, min(oldest) AS oldest, max(newest) AS newest,
     collect(CASE WHEN relation IS NOT NULL AND ($include_neutral OR relation <> 'NEUTRAL') THEN [r, f, pages, weight] END)
       AS listed,
     collect(CASE relation WHEN 'SUPPORTS' THEN [f.id, [p IN pages | [p.id, p.doi, p.title, p.year]]] END)
       AS supporting
WITH c, oldest, newest, supporting, size(listed) AS available,
     // each item a list (edge_id, relation, fragment_id, pages, passage, nli_confidence, weight,
     // source_domain_category, edge_human_corrected, nli_evidence_sentence, page_count, scanned_with, judge,
     // retracted); pages: up to $pages_per_item lists (id, url, title, year, doi, venue, retraction_state,
     // retraction_notices, retracted_at) of the task's pages carrying the fragment, oldest crawl first. retracted:
     // the edge came from a retracted paper and counts for nothing (weight 0.0; retractions/retract_edges).
     // superseded: its passage left the pages the task read (freshness/supersede_passages): weight 0.0 too.
     // Lists, not maps: maps cost the server and the driver more
     [x IN listed[..$evidence_limit] | [x[0].id, toLower(type(x[0])), x[1].id,
       [p IN x[2][..$pages_per_item] | [p.id, p.url, p.title, p.year, p.doi, p.venue, p.retraction_state,
                                        p.retraction_notices, toString(p.retracted_at)]], x[1].text,
       x[0].nli_confidence, x[3], x[0].source_domain_category, coalesce(x[0].edge_human_corrected, false),
       x[0].nli_evidence_sentence, size(x[2]), x[1].scanned_with, x[0].judge,
       coalesce(x[0].retracted, false), coalesce(x[0].superseded, false)]] AS evidence
// one row, one list per claim (collect() would drop the nulls of a column list)
RETURN collect([c.id, c.text, coalesce(c.claim_adoption_status, 'adopted'), c.claim_rejection_reason, oldest, newest,
                supporting, available, evidence, COUNT { (c)-[:SOURCE_REJECTED]->(:Domain) },
                [c.coverage_fragments, c.coverage_candidates, c.coverage_below_floor, c.coverage_own_source,
                 c.coverage_judged], EXISTS { (c)-[:EXTRACTED_FROM]->(:Fragment) }]) AS claims
