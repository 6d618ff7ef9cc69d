// mode: schema
CREATE CONSTRAINT judging_ticket_id_unique IF NOT EXISTS FOR (t:JudgingTicket) REQUIRE t.id IS UNIQUE
