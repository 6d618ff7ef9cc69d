// mode: write
// transactions: auto
// Hard clean-up: of the given pages, those with no fragment and no CITES edge left.
// Params: $page_ids, $batch_size
UNWIND $page_ids AS pid
MATCH (p:Page {id: pid})
WHERE NOT EXISTS { (p)<-[:EXTRACTED_FROM]-(:Fragment) } AND NOT EXISTS { (p)-[:CITES]-() }
  AND NOT EXISTS { (p)<-[:READ]-(:Task) }  // a page a task read stays while the task does
CALL (p) {
  DETACH DELETE p
} IN TRANSACTIONS OF $batch_size ROWS
