// mode: schema
CREATE CONSTRAINT domain_override_rule_id_unique IF NOT EXISTS FOR (n:DomainOverrideRule) REQUIRE n.id IS UNIQUE
