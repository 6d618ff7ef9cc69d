// mode: schema
CREATE INDEX claim_snapshot_task_id IF NOT EXISTS FOR (s:ClaimSnapshot) ON (s.task_id)
