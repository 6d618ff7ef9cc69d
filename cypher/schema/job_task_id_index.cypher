// mode: schema
CREATE INDEX job_task_id IF NOT EXISTS FOR (j:Job) ON (j.task_id)
