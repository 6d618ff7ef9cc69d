// mode: schema
CREATE INDEX judgment_task_id IF NOT EXISTS FOR (j:Judgment) ON (j.task_id)
