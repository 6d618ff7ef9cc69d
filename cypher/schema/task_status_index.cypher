// mode: schema
CREATE INDEX task_status IF NOT EXISTS FOR (t:Task) ON (t.status)
