// mode: write
// transactions: auto
// Removes pages whose URL starts with a prefix, with the fragments that no other page holds
// (used by the benchmarks to remove their synthetic corpus). A removed fragment's stance edges go with it: each one
// first leaves the stored sums of its claim (see materials/claim_scores), in the same transaction. Each fragment is
// handled once (fragments first, then pages), however many of the removed pages hold it.
// Params: $prefix, $batch_size
MATCH (p:Page)
WHERE p.url STARTS WITH $prefix
OPTIONAL MATCH (p)<-[:EXTRACTED_FROM]-(f:Fragment)
WHERE NOT EXISTS { (f)-[:EXTRACTED_FROM]->(other:Page) WHERE NOT other.url STARTS WITH $prefix }
WITH collect(DISTINCT f) AS fragments, collect(DISTINCT p) AS pages
UNWIND fragments + pages AS n
CALL (n) {
  CALL (n) {
    MATCH (n:Fragment)-[r:SUPPORTS|REFUTES|NEUTRAL]->(c:Claim)
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
  DETACH DELETE n
} IN TRANSACTIONS OF $batch_size ROWS
