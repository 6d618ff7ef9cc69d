// mode: write
// Queue a job of the service itself, not of a task (task_id null; the learning loop's proposal batch). At most one
// job per $key is queued or running: while one is, it is returned as it is (queued = false); once it has ended,
// its key is set aside (key + ':' + its id, so its result stays readable by id) and a new job is queued. It takes
// the next number of the 'jobs' Sequence like any target (cypher/jobs/enqueue_jobs.cypher), whose lock also
// makes two requests at once queue one job.
// Params: $key, $id, $kind, $value, $options (a JSON string)
MERGE (s:Sequence {name: 'jobs'})
  ON CREATE SET s.value = 0
WITH s
CALL apoc.lock.nodes([s])
SET s.value = s.value + 1
WITH s.value AS seq
OPTIONAL MATCH (ended:Job {key: $key})
  WHERE ended.state IN ['done', 'failed', 'cancelled', 'skipped']
SET ended.key = $key + ':' + ended.id
WITH seq
MERGE (j:Job {key: $key})
  ON CREATE SET j.id = $id, j.task_id = null, j.kind = $kind, j.value = $value, j.options = $options,
                j.state = 'queued', j.attempts = 0, j.workers = [], j.queue_seq = seq, j.queued_at = datetime(),
                j.created_at = datetime(), j.updated_at = datetime()
RETURN j.id AS id, j.state AS state, j.id = $id AS queued
