// mode: schema
CREATE INDEX judging_ticket_task_id IF NOT EXISTS FOR (t:JudgingTicket) ON (t.task_id)
