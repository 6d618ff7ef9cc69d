// mode: schema
CREATE INDEX claim_task_id IF NOT EXISTS FOR (c:Claim) ON (c.task_id)
