// mode: read
// A task's earlier targets for a refresh (docs/concepts/retractions.md): one row per distinct (kind, value) among
// its jobs of the kinds $kinds (a refresh's own jobs repeat a target, they are not new ones), with the options of
// its first job and whether a job for it is still queued, running or waiting for a person (a refresh leaves such a target alone).
// Oldest target first. Params: $task_id, $kinds
MATCH (:Task {id: $task_id})-[:HAS_JOB]->(j:Job)
WHERE j.kind IN $kinds
WITH j ORDER BY j.created_at, coalesce(j.queue_seq, 0), j.id
WITH j.kind AS kind, j.value AS value, collect(j) AS jobs
RETURN kind, value, head(jobs).options AS options,
       any(x IN jobs WHERE x.state IN ['queued', 'running', 'waiting']) AS pending
ORDER BY head(jobs).created_at, coalesce(head(jobs).queue_seq, 0), kind, value
