// mode: write
// Take the job queued first: the lowest queue_seq (handed out by enqueue_jobs in the order targets were queued;
// a job queued again takes a new number, a job put back by requeue_stale_jobs or resolve_auth keeps its own). Jobs
// queued before queue_seq existed go first, oldest first. (Ordering by id ran jobs in the order of their random
// ids within one request.) However many workers (threads or processes) ask at once, exactly one wins it:
// the node is locked, then its state is compared and set in one SET whose value reads the property it writes,
// which Cypher reads under the write lock. (A WHERE after apoc.lock.nodes is not enough: it reuses the state
// the MATCH cached before the lock, and several workers started the same job.) The winner's row has won = true;
// a loser gets won = false and may ask again. A queued job that already used $max_attempts runs is failed
// instead of run, so attempts never exceed the limit. The winner's name is appended to j.workers (one name per
// attempt: who ran each). Returns no row when nothing is queued.
// Params: $worker, $claim (a token unique to this call: finish_job and heartbeat_jobs match it), $max_attempts
MATCH (j:Job {state: 'queued'})
WITH j ORDER BY coalesce(j.queue_seq, 0), j.created_at, j.id LIMIT 1
CALL apoc.lock.nodes([j])
SET j.state = CASE j.state WHEN 'queued' THEN $claim ELSE j.state END
WITH j, j.state = $claim AND j.attempts < $max_attempts AS won, j.state = $claim AS taken
SET j.state = CASE WHEN won THEN 'running' WHEN taken THEN 'failed' ELSE j.state END,
    j.attempts = CASE WHEN won THEN j.attempts + 1 ELSE j.attempts END,
    j.error = CASE WHEN taken AND NOT won
                   THEN 'used all ' + toString(j.attempts) + ' attempts, not run again' ELSE j.error END,
    j.finished_at = CASE WHEN taken AND NOT won THEN datetime() ELSE j.finished_at END,
    j.worker = CASE WHEN won THEN $worker ELSE j.worker END,
    j.workers = CASE WHEN won THEN coalesce(j.workers, []) + $worker ELSE j.workers END,
    j.claim = CASE WHEN won THEN $claim ELSE j.claim END,
    j.started_at = CASE WHEN won THEN datetime() ELSE j.started_at END,
    j.heartbeat_at = CASE WHEN won THEN datetime() ELSE j.heartbeat_at END,
    j.cancel_requested = CASE WHEN won THEN false ELSE j.cancel_requested END,
    j.updated_at = CASE WHEN taken THEN datetime() ELSE j.updated_at END
RETURN won, j.id AS id, j.task_id AS task_id, j.kind AS kind, j.value AS value, j.options AS options,
       j.attempts AS attempts
