// mode: write
// transactions: auto
// Garbage collection, step 2 (after delete_orphan_claims): fragments that do not stay. A fragment stays when it
// has a stance edge to a claim a Task holds, or one of its pages is in use (a Task READ it, or one of the page's
// fragments has such an edge): a document some task uses keeps all of its passages, judged or not. Once orphan claims are gone, a
// fragment that does not stay has no stance edge at all. Returns how many fragments (and stray edges) went.
// Params: $batch_size
MATCH (f:Fragment)
WHERE NOT EXISTS { (f)-[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim)<-[:HAS_CLAIM]-(:Task) }
  AND NOT EXISTS { (f)<-[:EXTRACTED_FROM]-(:Claim)<-[:HAS_CLAIM]-(:Task) }  // the source of a held claim stays
  AND NOT EXISTS { (f)-[:EXTRACTED_FROM]->(:Page)<-[:READ]-(:Task) }  // a page a task read keeps its passages
  AND NOT EXISTS {
    (f)-[:EXTRACTED_FROM]->(:Page)<-[:EXTRACTED_FROM]-(:Fragment)
      -[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim)<-[:HAS_CLAIM]-(:Task)
  }
WITH f, COUNT { (f)-[:SUPPORTS|REFUTES|NEUTRAL]->() } AS stance_edges
CALL (f) {
  CALL (f) {  // its stance edges leave their claims' stored sums first (see materials/claim_scores)
    MATCH (f)-[r:SUPPORTS|REFUTES|NEUTRAL]->(c:Claim)
    CALL apoc.lock.nodes([c])
    WITH r, c, CASE WHEN (r.retracted = true OR r.superseded = true) THEN null ELSE type(r) END AS rel,  // a retracted edge counts for nothing
         CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE coalesce(toFloat(r.nli_confidence), 0.0) END AS weight
    SET c.evidence_supports = c.evidence_supports - CASE rel WHEN 'SUPPORTS' THEN 1 ELSE 0 END,
        c.evidence_refutes = c.evidence_refutes - CASE rel WHEN 'REFUTES' THEN 1 ELSE 0 END,
        c.evidence_neutrals = c.evidence_neutrals - CASE rel WHEN 'NEUTRAL' THEN 1 ELSE 0 END
    SET c.evidence_support_weight = CASE WHEN c.evidence_supports = 0 THEN 0.0
                                         ELSE c.evidence_support_weight - CASE rel WHEN 'SUPPORTS' THEN weight ELSE 0.0 END END,
        c.evidence_refute_weight = CASE WHEN c.evidence_refutes = 0 THEN 0.0
                                        ELSE c.evidence_refute_weight - CASE rel WHEN 'REFUTES' THEN weight ELSE 0.0 END END
  }
  DETACH DELETE f
} IN TRANSACTIONS OF $batch_size ROWS
RETURN count(*) AS fragments, coalesce(sum(stance_edges), 0) AS stance_edges
