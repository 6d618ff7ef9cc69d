// mode: write
// transactions: auto
// Garbage collection, step 3: CITES edges whose two pages both hold no fragment any more (the graph-wide form of
// delete_orphan_citations). A page that still holds a fragment keeps its citations both ways.
// Params: $batch_size
MATCH (p:Page)-[r:CITES]->(q:Page)
WHERE NOT EXISTS { (p)<-[:EXTRACTED_FROM]-(:Fragment) } AND NOT EXISTS { (q)<-[:EXTRACTED_FROM]-(:Fragment) }
CALL (r) {
  DELETE r
} IN TRANSACTIONS OF $batch_size ROWS
RETURN count(*) AS citations
