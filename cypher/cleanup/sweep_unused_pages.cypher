// mode: write
// transactions: auto
// Garbage collection, step 4: pages with no fragment and no CITES edge left (the graph-wide form of
// delete_orphan_pages). Their Domain nodes stay. Params: $batch_size
MATCH (p:Page)
WHERE NOT EXISTS { (p)<-[:EXTRACTED_FROM]-(:Fragment) } AND NOT EXISTS { (p)-[:CITES]-() }
  AND NOT EXISTS { (p)<-[:READ]-(:Task) }  // a page a task read stays while the task does
CALL (p) {
  DETACH DELETE p
} IN TRANSACTIONS OF $batch_size ROWS
RETURN count(*) AS pages
