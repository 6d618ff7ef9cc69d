// mode: schema
CREATE CONSTRAINT rule_set_version_unique IF NOT EXISTS FOR (n:RuleSetVersion) REQUIRE (n.component, n.version) IS UNIQUE
