// mode: write
// transactions: auto
// Hard clean-up: CITES edges touching the given pages whose two ends both hold no fragment any more.
// Params: $page_ids, $batch_size
UNWIND $page_ids AS pid
MATCH (p:Page {id: pid})-[r:CITES]-(other:Page)
WHERE NOT EXISTS { (p)<-[:EXTRACTED_FROM]-(:Fragment) }
  AND NOT EXISTS { (other)<-[:EXTRACTED_FROM]-(:Fragment) }
WITH DISTINCT r
CALL (r) {
  DELETE r
} IN TRANSACTIONS OF $batch_size ROWS
