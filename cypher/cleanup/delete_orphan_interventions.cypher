// mode: write
// transactions: auto
// Garbage collection, last step: Intervention items no Task holds. Params: $batch_size
MATCH (i:Intervention)
WHERE NOT EXISTS { (:Task)-[:HAS_INTERVENTION]->(i) }
CALL (i) {
  DETACH DELETE i
} IN TRANSACTIONS OF $batch_size ROWS
RETURN count(*) AS interventions
