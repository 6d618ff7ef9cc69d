// mode: write
// transactions: auto
// Soft clean-up, step 2 (after delete_task_claim_links): the task's claims, in batches (DETACH: a link made since
// step 1 goes with its claim).
// Params: $task_id, $batch_size
MATCH (c:Claim {task_id: $task_id})
CALL (c) {
  DETACH DELETE c
} IN TRANSACTIONS OF $batch_size ROWS
