// mode: schema
CREATE CONSTRAINT calibration_evaluation_id_unique IF NOT EXISTS FOR (n:CalibrationEvaluation) REQUIRE n.id IS UNIQUE
