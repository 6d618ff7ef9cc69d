// mode: write
// transactions: auto
// Soft clean-up, step 2: the task's Job nodes (task-scoped, decision record 0002), so a task created again with the same id
// queues its targets afresh (a job's key is derived from the task id). Jobs are matched by their task_id, which
// also finds a job whose HAS_JOB edge is gone. Params: $task_id, $batch_size
MATCH (j:Job {task_id: $task_id})
CALL (j) {
  DETACH DELETE j
} IN TRANSACTIONS OF $batch_size ROWS
RETURN count(*) AS jobs
