// mode: write
// Queue one job per target. A target already known for the task (same key) is not queued twice: a queued,
// running, waiting (for a person) or done job is returned as it is (queued = false); a cancelled, failed or skipped
// one is queued again, which is how a stopped task resumes. Queuing work sets the task running.
// Queue order: every row takes the next number of the 'jobs' Sequence (in the order of $rows), and a job that is
// queued (or queued again) keeps it as queue_seq, which claim_next_job takes jobs by. The counter node is locked
// first and held until commit, so numbers are handed out in commit order, one request after the other (as in
// cypher/fragment_index/sequence_fragments.cypher); the SET reads the counter it writes afresh under the lock.
// Params: $task_id, $rows = [{id, key, kind, value, options}] (options is a JSON string)
MATCH (t:Task {id: $task_id})
MERGE (s:Sequence {name: 'jobs'})
  ON CREATE SET s.value = 0
WITH t, s
CALL apoc.lock.nodes([s])
SET s.value = s.value + size($rows)
WITH t, s.value - size($rows) AS base
UNWIND range(0, size($rows) - 1) AS i
WITH t, $rows[i] AS row, base + i + 1 AS seq
MERGE (j:Job {key: row.key})
  ON CREATE SET j.id = row.id, j.task_id = $task_id, j.kind = row.kind, j.value = row.value,
                j.options = row.options, j.state = 'new', j.attempts = 0, j.created_at = datetime()
MERGE (t)-[:HAS_JOB]->(j)
WITH t, j, row, seq, j.state IN ['new', 'cancelled', 'failed', 'skipped'] AS queue_it
SET j.state = CASE WHEN queue_it THEN 'queued' ELSE j.state END,
    j.queue_seq = CASE WHEN queue_it THEN seq ELSE j.queue_seq END,
    j.queued_at = CASE WHEN queue_it THEN datetime() ELSE j.queued_at END,
    j.error = CASE WHEN queue_it THEN null ELSE j.error END,
    j.attempts = CASE WHEN queue_it THEN 0 ELSE j.attempts END,
    j.workers = CASE WHEN queue_it THEN [] ELSE j.workers END,
    j.options = CASE WHEN queue_it THEN row.options ELSE j.options END,
    j.finished_at = CASE WHEN queue_it THEN null ELSE j.finished_at END,
    j.updated_at = CASE WHEN queue_it THEN datetime() ELSE j.updated_at END,
    t.status = CASE WHEN queue_it THEN 'running' ELSE t.status END,
    t.stop_requested = CASE WHEN queue_it THEN null ELSE t.stop_requested END,
    t.updated_at = CASE WHEN queue_it THEN datetime() ELSE t.updated_at END
RETURN row.key AS key, j.id AS id, j.state AS state, queue_it AS queued
