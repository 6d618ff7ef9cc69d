// mode: schema
CREATE CONSTRAINT job_key_unique IF NOT EXISTS FOR (j:Job) REQUIRE j.key IS UNIQUE
