// mode: read
// The domains a task stopped using because one of their pages carried a dangerous pattern. Params: $task_id
MATCH (:Task {id: $task_id})-[s:SKIPS_DOMAIN]->(d:Domain)
RETURN d.name AS domain, s.url AS url, s.kinds AS kinds, s.finding_id AS finding_id, s.skipped_at AS skipped_at
ORDER BY s.skipped_at, d.name
