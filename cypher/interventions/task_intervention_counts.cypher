// mode: read
// Counts of a task's items per status, the paused domains (a pending item each at least) and the jobs waiting
// on a paused domain without an item of their own.
// Params: $task_id
MATCH (t:Task {id: $task_id})
CALL (t) {
  OPTIONAL MATCH (t)-[:HAS_INTERVENTION]->(i:Intervention)
  RETURN count(CASE i.status WHEN 'pending' THEN 1 END) AS pending,
         count(CASE i.status WHEN 'resolved' THEN 1 END) AS resolved,
         count(CASE i.status WHEN 'skipped' THEN 1 END) AS skipped,
         [d IN collect(DISTINCT CASE i.status WHEN 'pending' THEN i.domain END) WHERE d IS NOT NULL] AS paused
}
CALL (t) {
  OPTIONAL MATCH (t)-[:HAS_JOB]->(h:Job {state: 'waiting'})
  WHERE h.waiting_on IS NULL
  RETURN count(h) AS held
}
RETURN pending, resolved, skipped, paused, held
