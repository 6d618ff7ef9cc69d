// mode: write
// Soft clean-up, step 3: the Task node itself (task-scoped; its claims and jobs are already gone).
// Params: $task_id
MATCH (t:Task {id: $task_id})
DETACH DELETE t
RETURN count(*) AS tasks
