// mode: schema
CREATE CONSTRAINT feedback_event_id_unique IF NOT EXISTS FOR (n:FeedbackEvent) REQUIRE n.id IS UNIQUE
