// mode: read
// A task's intervention items, pending first then newest first; $status null: all of them.
// Params: $task_id, $status, $limit
MATCH (:Task {id: $task_id})-[:HAS_INTERVENTION]->(i:Intervention)
WHERE $status IS NULL OR i.status = $status
OPTIONAL MATCH (i)-[:FOR_JOB]->(j:Job)
RETURN i.id AS id, i.task_id AS task_id, i.job_id AS job_id, i.url AS url, i.domain AS domain, i.kind AS kind,
       i.reason AS reason, i.status AS status, i.attempts AS attempts, i.created_at AS created_at,
       i.updated_at AS updated_at, i.resolved_at AS resolved_at, i.resolver AS resolver, i.action AS action,
       i.note AS note, j.state AS job_state
ORDER BY CASE i.status WHEN 'pending' THEN 0 ELSE 1 END, i.updated_at DESC, i.id
LIMIT $limit
