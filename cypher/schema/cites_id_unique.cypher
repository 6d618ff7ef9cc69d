// mode: schema
CREATE CONSTRAINT cites_id_unique IF NOT EXISTS FOR ()-[r:CITES]-() REQUIRE r.id IS UNIQUE
