// mode: schema
CREATE INDEX job_state IF NOT EXISTS FOR (j:Job) ON (j.state, j.created_at)
