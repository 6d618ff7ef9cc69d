// mode: write
// transactions: auto
// Hard clean-up: claims that no Task holds any more (left by an interrupted clean-up), with their edges.
// Params: $batch_size
MATCH (c:Claim)
WHERE NOT EXISTS { (:Task)-[:HAS_CLAIM]->(c) }
CALL (c) {
  DETACH DELETE c
} IN TRANSACTIONS OF $batch_size ROWS
