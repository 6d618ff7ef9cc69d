// mode: write
// A new rule-set version of a component (append-only): the rule ids active from now on. The component's
// RuleComponent node is locked, so versions are numbered without gaps or duplicates.
// Params: $component, $rule_ids, $cause, $reviewer_id, $reason
MERGE (k:RuleComponent {name: $component})
WITH k
CALL apoc.lock.nodes([k])
OPTIONAL MATCH (s:RuleSetVersion {component: $component})
WITH k, coalesce(max(s.version), 0) + 1 AS version
CREATE (n:RuleSetVersion {component: $component, version: version, rule_ids: $rule_ids, cause: $cause,
                          reviewer_id: $reviewer_id, reason: $reason, created_at: datetime()})
SET k.version = version
RETURN n.version AS version
