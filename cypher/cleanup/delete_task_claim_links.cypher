// mode: write
// transactions: auto
// Soft clean-up, step 1: every relationship of the task's claims (their stance edges first of all), in batches of
// $batch_size relationships. Batching by relationship rather than by claim keeps each transaction's size bounded
// however many edges a claim has: 10,000 claims of 30 edges each in one batch of claims went past Neo4j's
// transaction memory pool (MemoryPoolOutOfMemoryError, `lyra bench scale --floor` at 10k claims).
// A link between two of the task's claims would be met from both ends; those are left to step 2 (DETACH).
// Params: $task_id, $batch_size
MATCH (:Claim {task_id: $task_id})-[r]-(other)
  WHERE NOT (other:Claim AND other.task_id = $task_id)
CALL (r) {
  DELETE r
} IN TRANSACTIONS OF $batch_size ROWS
