// mode: write
// transactions: auto
// Removes the pages with the given URLs that no stance edge uses any more (another task's edge keeps the page),
// with the fragments no other page holds (used by the citation benchmark to remove the papers it wrote, read or
// not). A fragment of such a page has no stance edge, so no claim's stored sums change. Params: $urls, $batch_size
UNWIND $urls AS url
MATCH (p:Page {url: url})
WHERE NOT EXISTS { (p)<-[:EXTRACTED_FROM]-(:Fragment)-[:SUPPORTS|REFUTES|NEUTRAL]->() }
OPTIONAL MATCH (p)<-[:EXTRACTED_FROM]-(f:Fragment)
WHERE NOT EXISTS { (f)-[:EXTRACTED_FROM]->(other:Page) WHERE NOT other.url IN $urls }
WITH p, collect(f) AS fragments
CALL (p, fragments) {
  FOREACH (f IN fragments | DETACH DELETE f)
  DETACH DELETE p
} IN TRANSACTIONS OF $batch_size ROWS
