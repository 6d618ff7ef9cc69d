// mode: schema
CREATE CONSTRAINT neutral_id_unique IF NOT EXISTS FOR ()-[r:NEUTRAL]-() REQUIRE r.id IS UNIQUE
