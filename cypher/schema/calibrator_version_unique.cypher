// mode: schema
CREATE CONSTRAINT calibrator_version_unique IF NOT EXISTS FOR (n:Calibrator) REQUIRE n.version IS UNIQUE
