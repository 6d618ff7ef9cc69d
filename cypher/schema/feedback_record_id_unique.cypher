// mode: schema
CREATE CONSTRAINT feedback_record_id_unique IF NOT EXISTS FOR (n:FeedbackRecord) REQUIRE n.id IS UNIQUE
