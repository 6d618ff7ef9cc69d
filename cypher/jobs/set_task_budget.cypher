// mode: write
// A task's budget (max pages, max seconds of job time); null leaves it unlimited.
// Params: $task_id, $max_pages, $max_seconds
MATCH (t:Task {id: $task_id})
SET t.budget_max_pages = $max_pages, t.budget_max_seconds = $max_seconds, t.updated_at = datetime()
RETURN t.id AS id
