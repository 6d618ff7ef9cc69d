// mode: read
// The latest rule-set version of every component.
MATCH (k:RuleComponent)
MATCH (s:RuleSetVersion {component: k.name, version: k.version})
RETURN s {.*, created_at: toString(s.created_at)} AS rule_set
ORDER BY s.component
