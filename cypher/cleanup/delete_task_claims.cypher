// mode: write
// transactions: auto
// Soft clean-up, step 1: the task's claims with their stance edges, in batches.
// Params: $task_id, $batch_size
MATCH (c:Claim {task_id: $task_id})
CALL (c) {
  DETACH DELETE c
} IN TRANSACTIONS OF $batch_size ROWS
