// mode: read
// The domain override audit log, oldest first. Params: $limit
MATCH (e:DomainOverrideEvent)
RETURN e.id AS id, e.rule_id AS rule_id, e.action AS action, e.domain_pattern AS domain_pattern,
       e.decision AS decision, e.reason AS reason, e.task_id AS task_id, e.created_at AS created_at
ORDER BY e.created_at, e.id
LIMIT $limit
