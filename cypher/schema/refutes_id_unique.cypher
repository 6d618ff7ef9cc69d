// mode: schema
CREATE CONSTRAINT refutes_id_unique IF NOT EXISTS FOR ()-[r:REFUTES]-() REQUIRE r.id IS UNIQUE
