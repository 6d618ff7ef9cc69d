// mode: schema
CREATE CONSTRAINT intervention_job_id_unique IF NOT EXISTS FOR (i:Intervention) REQUIRE i.job_id IS UNIQUE
