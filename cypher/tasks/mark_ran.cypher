// mode: write
// A synchronous ingest (the CLI's `lyra ingest` / `lyra research` over a corpus) gathered evidence for the task
// outside the job queue: a task still 'created' becomes 'completed', as it does when its last job finishes
// (jobs/finish_job). Any other status stays: a running task completes with its jobs, a paused one stays paused.
// No row when the task does not exist.
// Params: $task_id
MATCH (t:Task {id: $task_id})
SET t.status = CASE WHEN t.status = 'created' THEN 'completed' ELSE t.status END, t.updated_at = datetime()
RETURN t.status AS status
