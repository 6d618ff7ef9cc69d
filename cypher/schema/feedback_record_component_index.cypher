// mode: schema
CREATE INDEX feedback_record_component_index IF NOT EXISTS FOR (n:FeedbackRecord) ON (n.component)
