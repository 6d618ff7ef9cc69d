// mode: write
// Soft clean-up, step 2: the Task node itself (task-scoped; its claims are already gone).
// Params: $task_id
MATCH (t:Task {id: $task_id})
DETACH DELETE t
RETURN count(*) AS tasks
