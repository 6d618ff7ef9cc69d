// mode: read
// Whether a domain is paused for a task (one of the task's items for it is pending), and since when.
// Params: $task_id, $domain
MATCH (i:Intervention {task_id: $task_id, domain: $domain, status: 'pending'})
RETURN count(i) AS pending, min(i.created_at) AS since, collect(i.id)[..5] AS ids
