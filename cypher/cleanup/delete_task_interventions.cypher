// mode: write
// transactions: auto
// Soft clean-up: the task's Intervention items (task-scoped, decision record 0002), matched by task_id so
// an item whose HAS_INTERVENTION edge is gone goes too. Params: $task_id, $batch_size
MATCH (i:Intervention {task_id: $task_id})
CALL (i) {
  DETACH DELETE i
} IN TRANSACTIONS OF $batch_size ROWS
RETURN count(*) AS interventions
