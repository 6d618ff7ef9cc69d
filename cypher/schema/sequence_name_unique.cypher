// mode: schema
CREATE CONSTRAINT sequence_name_unique IF NOT EXISTS FOR (s:Sequence) REQUIRE s.name IS UNIQUE
