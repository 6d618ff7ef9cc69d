// mode: schema
CREATE CONSTRAINT fragment_id_unique IF NOT EXISTS FOR (f:Fragment) REQUIRE f.id IS UNIQUE
