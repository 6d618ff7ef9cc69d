// mode: write
// transactions: auto
// Claims that no Task holds any more (left by an interrupted clean-up), with their edges (hard clean-up and the
// garbage collection). Returns how many claims and stance edges went.
// Params: $batch_size
MATCH (c:Claim)
WHERE NOT EXISTS { (:Task)-[:HAS_CLAIM]->(c) }
WITH c, COUNT { (c)<-[:SUPPORTS|REFUTES|NEUTRAL]-() } AS stance_edges
CALL (c) {
  DETACH DELETE c
} IN TRANSACTIONS OF $batch_size ROWS
RETURN count(*) AS claims, coalesce(sum(stance_edges), 0) AS stance_edges
