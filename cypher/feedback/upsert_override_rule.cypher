// mode: write
// domain_block / domain_unblock: the active rule for the pattern is created or changed, and an event is appended
// to the audit log (DomainOverrideEvent nodes are only ever created, never changed or deleted).
// The global rule set is locked first so two concurrent feedback calls cannot both create a rule.
// Params: $rule_id, $event_id, $pattern, $decision ('block' | 'unblock'), $reason, $action, $task_id
MERGE (lock:LyraLock {name: 'domain_override_rules'})
WITH lock
CALL apoc.lock.nodes([lock])
OPTIONAL MATCH (old:DomainOverrideRule {domain_pattern: $pattern, is_active: true})
WITH old, old.decision AS previous
CALL (old) {
  WITH old WHERE old IS NULL
  CREATE (r:DomainOverrideRule {id: $rule_id, domain_pattern: $pattern, decision: $decision, reason: $reason,
                                is_active: true, created_at: datetime(), updated_at: datetime(), created_by: 'feedback'})
  RETURN r
  UNION
  WITH old WHERE old IS NOT NULL
  SET old.decision = $decision, old.reason = $reason, old.updated_at = datetime()
  RETURN old AS r
}
CREATE (e:DomainOverrideEvent {id: $event_id, rule_id: r.id, action: $action, domain_pattern: $pattern,
                               decision: $decision, reason: $reason, task_id: $task_id, created_at: datetime(),
                               created_by: 'feedback'})
RETURN r.id AS rule_id, r.domain_pattern AS domain_pattern, r.decision AS decision, r.reason AS reason,
       r.updated_at AS updated_at, previous, e.id AS event_id
