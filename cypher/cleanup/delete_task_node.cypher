// mode: write
// Soft clean-up, last step: the Task node itself (task-scoped; its claims, jobs and intervention items are gone).
// Params: $task_id
MATCH (t:Task {id: $task_id})
DETACH DELETE t
RETURN count(*) AS tasks
