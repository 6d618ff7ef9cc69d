// mode: schema
CREATE CONSTRAINT nli_correction_id_unique IF NOT EXISTS FOR (n:NLICorrection) REQUIRE n.id IS UNIQUE
