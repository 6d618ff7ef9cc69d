// mode: write
// transactions: auto
// Garbage collection, step 2 (after delete_orphan_claims): fragments that do not stay. A fragment stays when it
// has a stance edge to a claim a Task holds, or one of its pages is in use (one of the page's fragments has such
// an edge): a document some task uses keeps all of its passages, judged or not. Once orphan claims are gone, a
// fragment that does not stay has no stance edge at all. Returns how many fragments (and stray edges) went.
// Params: $batch_size
MATCH (f:Fragment)
WHERE NOT EXISTS { (f)-[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim)<-[:HAS_CLAIM]-(:Task) }
  AND NOT EXISTS { (f)<-[:EXTRACTED_FROM]-(:Claim)<-[:HAS_CLAIM]-(:Task) }  // the source of a held claim stays
  AND NOT EXISTS {
    (f)-[:EXTRACTED_FROM]->(:Page)<-[:EXTRACTED_FROM]-(:Fragment)
      -[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim)<-[:HAS_CLAIM]-(:Task)
  }
WITH f, COUNT { (f)-[:SUPPORTS|REFUTES|NEUTRAL]->() } AS stance_edges
CALL (f) {
  DETACH DELETE f
} IN TRANSACTIONS OF $batch_size ROWS
RETURN count(*) AS fragments, coalesce(sum(stance_edges), 0) AS stance_edges
