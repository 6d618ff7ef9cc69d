// mode: write
// The task that met a dangerous page stops using its domain: (Task)-[:SKIPS_DOMAIN]->(Domain), kept with the first
// page and finding. It goes with the task (clean-up deletes the Task node and its relationships); other tasks keep
// using the domain. Returns whether the task skipped the domain before (nothing when the task is unknown).
// Params: $task_id, $domain, $category, $url, $kinds, $finding_id
MATCH (t:Task {id: $task_id})
MERGE (d:Domain {name: $domain})
  ON CREATE SET d.domain_category = $category
WITH t, d, EXISTS { (t)-[:SKIPS_DOMAIN]->(d) } AS was_skipped
MERGE (t)-[s:SKIPS_DOMAIN]->(d)
  ON CREATE SET s.url = $url, s.kinds = $kinds, s.finding_id = $finding_id, s.skipped_at = datetime()
RETURN d.name AS domain, was_skipped
