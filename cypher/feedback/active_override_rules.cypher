// mode: read
// The active domain override rules (the source of truth for human block / unblock decisions), newest first.
MATCH (r:DomainOverrideRule {is_active: true})
RETURN r.id AS rule_id, r.domain_pattern AS domain_pattern, r.decision AS decision, r.reason AS reason,
       r.created_at AS created_at, r.updated_at AS updated_at
ORDER BY r.updated_at DESC
