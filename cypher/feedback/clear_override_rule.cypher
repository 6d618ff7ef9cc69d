// mode: write
// domain_clear_override: the active rule for the pattern is deactivated (kept, with cleared_at) and an event is
// appended to the audit log. No row when no active rule has this pattern (nothing is written then).
// Params: $event_id, $pattern, $reason, $task_id
MATCH (r:DomainOverrideRule {domain_pattern: $pattern, is_active: true})
SET r.is_active = false, r.cleared_at = datetime(), r.updated_at = datetime()
CREATE (e:DomainOverrideEvent {id: $event_id, rule_id: r.id, action: 'domain_clear_override', domain_pattern: $pattern,
                               decision: 'clear', reason: $reason, task_id: $task_id, created_at: datetime(),
                               created_by: 'feedback'})
RETURN r.id AS rule_id, r.decision AS previous, e.id AS event_id
