// mode: write
// transactions: auto
// Garbage collection, step 5: Job nodes no Task holds (left by soft clean-ups before they removed jobs).
// Params: $batch_size
MATCH (j:Job)
WHERE NOT EXISTS { (:Task)-[:HAS_JOB]->(j) }
CALL (j) {
  DETACH DELETE j
} IN TRANSACTIONS OF $batch_size ROWS
RETURN count(*) AS jobs
