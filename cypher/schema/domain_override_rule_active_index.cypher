// mode: schema
CREATE INDEX domain_override_rule_active IF NOT EXISTS FOR (r:DomainOverrideRule) ON (r.is_active, r.domain_pattern)
