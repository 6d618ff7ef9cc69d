// mode: write
// transactions: auto
// Removes pages whose URL starts with a prefix, with the fragments that no other page holds
// (used by the benchmarks to remove their synthetic corpus). Params: $prefix, $batch_size
MATCH (p:Page)
WHERE p.url STARTS WITH $prefix
OPTIONAL MATCH (p)<-[:EXTRACTED_FROM]-(f:Fragment)
WHERE NOT EXISTS { (f)-[:EXTRACTED_FROM]->(other:Page) WHERE NOT other.url STARTS WITH $prefix }
WITH p, collect(f) AS fragments
CALL (p, fragments) {
  FOREACH (f IN fragments | DETACH DELETE f)
  DETACH DELETE p
} IN TRANSACTIONS OF $batch_size ROWS
