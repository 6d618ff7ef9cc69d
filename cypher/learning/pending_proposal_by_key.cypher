// mode: read
// The pending proposal of a component, rule type and key (for consolidation). Params: $component, $rule_type, $key
MATCH (p:Proposal {component: $component, rule_type: $rule_type, key: $key, status: 'pending'})
RETURN p.id AS id
ORDER BY p.created_at
LIMIT 1
