// mode: write
// A person lets a task use domains again (feedback domain_unblock on that task). Params: $task_id, $domains
MATCH (:Task {id: $task_id})-[s:SKIPS_DOMAIN]->(d:Domain)
WHERE d.name IN $domains
DELETE s
RETURN collect(d.name) AS domains
