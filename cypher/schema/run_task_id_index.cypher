// mode: schema
CREATE INDEX run_task_id IF NOT EXISTS FOR (r:Run) ON (r.task_id)
