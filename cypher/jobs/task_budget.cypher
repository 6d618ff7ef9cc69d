// mode: read
// A task's budget and what its jobs have used so far.
// Params: $task_id
MATCH (t:Task {id: $task_id})
RETURN t.budget_max_pages AS max_pages, t.budget_max_seconds AS max_seconds,
       coalesce(t.pages_used, 0) AS pages_used, coalesce(t.seconds_used, 0.0) AS seconds_used
