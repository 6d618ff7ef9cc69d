// mode: schema
CREATE CONSTRAINT intervention_id_unique IF NOT EXISTS FOR (i:Intervention) REQUIRE i.id IS UNIQUE
