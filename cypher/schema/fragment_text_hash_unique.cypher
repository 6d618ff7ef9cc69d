// mode: schema
CREATE CONSTRAINT fragment_text_hash_unique IF NOT EXISTS FOR (f:Fragment) REQUIRE f.text_hash IS UNIQUE
