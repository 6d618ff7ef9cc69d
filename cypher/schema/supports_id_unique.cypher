// mode: schema
CREATE CONSTRAINT supports_id_unique IF NOT EXISTS FOR ()-[r:SUPPORTS]-() REQUIRE r.id IS UNIQUE
