// mode: write
// transactions: auto
// Soft clean-up: the task's runs and claim snapshots (cypher/timeline), matched by task_id. Params: $task_id,
// $batch_size
CALL () {
  MATCH (s:ClaimSnapshot {task_id: $task_id})
  RETURN s AS n
  UNION
  MATCH (r:Run {task_id: $task_id})
  RETURN r AS n
}
CALL (n) {
  DETACH DELETE n
} IN TRANSACTIONS OF $batch_size ROWS
RETURN count(*) AS deleted
