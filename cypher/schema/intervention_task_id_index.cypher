// mode: schema
CREATE INDEX intervention_task_id IF NOT EXISTS FOR (i:Intervention) ON (i.task_id)
