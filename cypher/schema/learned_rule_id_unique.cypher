// mode: schema
CREATE CONSTRAINT learned_rule_id_unique IF NOT EXISTS FOR (n:LearnedRule) REQUIRE n.id IS UNIQUE
