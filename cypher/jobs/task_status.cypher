// mode: read
// Everything get_status reports for one task, in one round trip: job counts per state (waiting: for a person), graph metrics,
// budget counters and the time of the last activity. Only datetime values count as activity: a timestamp stored
// as a string (a Task written by hand) is skipped, and idle_seconds is null when no datetime is left.
// Params: $task_id
MATCH (t:Task {id: $task_id})
CALL (t) {
  OPTIONAL MATCH (t)-[:HAS_JOB]->(j:Job)
  RETURN count(CASE j.state WHEN 'queued' THEN 1 END) AS queued,
         count(CASE j.state WHEN 'running' THEN 1 END) AS running,
         count(CASE j.state WHEN 'done' THEN 1 END) AS done,
         count(CASE j.state WHEN 'failed' THEN 1 END) AS failed,
         count(CASE j.state WHEN 'cancelled' THEN 1 END) AS cancelled,
         count(CASE j.state WHEN 'waiting' THEN 1 END) AS waiting,
         count(CASE j.state WHEN 'skipped' THEN 1 END) AS skipped,
         max(j.updated_at) AS last_job_update
}
CALL (t) {
  OPTIONAL MATCH (t)-[:HAS_CLAIM]->(c:Claim)
  OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
  RETURN count(DISTINCT c) AS claims,
         count(CASE type(r) WHEN 'SUPPORTS' THEN 1 END) AS supports,
         count(CASE type(r) WHEN 'REFUTES' THEN 1 END) AS refutes,
         count(CASE type(r) WHEN 'NEUTRAL' THEN 1 END) AS neutral,
         count(DISTINCT f) AS fragments,
         collect(DISTINCT f) AS fs,
         max(r.created_at) AS last_edge
}
CALL (fs) {
  UNWIND fs AS f
  MATCH (f)-[:EXTRACTED_FROM]->(p:Page)
  RETURN count(DISTINCT p) AS pages
}
RETURN t.id AS task_id, t.hypothesis AS hypothesis, t.status AS status, t.stop_requested AS stop_requested,
       t.budget_max_pages AS max_pages, t.budget_max_seconds AS max_seconds,
       coalesce(t.pages_used, 0) AS pages_used, coalesce(t.seconds_used, 0.0) AS seconds_used,
       queued, running, done, failed, cancelled, waiting, skipped, claims, supports, refutes, neutral, fragments, pages,
       duration.inSeconds(
         reduce(m = null, x IN [t.created_at, t.updated_at, last_job_update, last_edge] |
                CASE WHEN x IS :: ZONED DATETIME NOT NULL AND (m IS NULL OR x > m) THEN x ELSE m END),
         datetime()).seconds AS idle_seconds
