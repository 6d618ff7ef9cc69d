// mode: write
// Stop a task: its queued jobs are cancelled; running ones are asked to cancel when $immediate,
// otherwise they finish. The task is 'paused' and stays resumable (queue new targets to resume).
// Params: $task_id, $immediate
MATCH (t:Task {id: $task_id})
SET t.status = 'paused', t.stop_requested = CASE WHEN $immediate THEN 'immediate' ELSE 'graceful' END,
    t.updated_at = datetime()
WITH t
CALL (t) {
  // compare-and-set under the node's write lock (the SET reads the state it writes): a job a worker claimed
  // since the MATCH keeps running instead of turning 'cancelled' under it
  MATCH (t)-[:HAS_JOB]->(q:Job {state: 'queued'})
  SET q.state = CASE q.state WHEN 'queued' THEN 'cancelling' ELSE q.state END
  WITH q WHERE q.state = 'cancelling'
  SET q.state = 'cancelled', q.error = 'stopped before it ran', q.finished_at = datetime(), q.updated_at = datetime()
  RETURN count(q) AS cancelled
}
CALL (t) {
  OPTIONAL MATCH (t)-[:HAS_JOB]->(r:Job {state: 'running'})
  SET r.cancel_requested = CASE WHEN $immediate THEN true ELSE r.cancel_requested END
  RETURN count(r) AS running
}
RETURN cancelled, running
