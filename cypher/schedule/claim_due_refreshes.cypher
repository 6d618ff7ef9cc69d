// mode: write
// Claim the tasks whose scheduled refresh is due ($now_ms, epoch milliseconds) and move each one's next refresh one
// period on, in this one statement, so that however many `lyra serve` processes ask at once a due refresh is
// claimed by exactly one (which then queues it as a job). The pattern of cypher/jobs/claim_next_job: the task is
// locked, then refresh_due_ms is compared and set in one SET whose value reads the property it writes (Cypher reads
// it under the write lock, not from what the MATCH cached): a due, unclaimed task (refresh_due_ms >= 0) takes the
// negative $token; the caller that finds its own token there won and moves the due time on, the others keep what
// the winner wrote. Rows for the winner (won = true) and for losers (won = false; they queue nothing).
// Params: $now_ms, $token (a positive integer unique to this call), $limit
MATCH (t:Task)
  WHERE t.refresh_due_ms IS NOT NULL AND t.refresh_due_ms <= $now_ms
WITH t ORDER BY t.refresh_due_ms, t.id LIMIT $limit
CALL apoc.lock.nodes([t])
SET t.refresh_due_ms = CASE WHEN t.refresh_due_ms >= 0 AND t.refresh_due_ms <= $now_ms THEN -$token
                            ELSE t.refresh_due_ms END
WITH t, t.refresh_due_ms = -$token AS won
SET t.refresh_due_ms = CASE WHEN won THEN $now_ms + t.refresh_every_seconds * 1000 ELSE t.refresh_due_ms END,
    t.refresh_next_at = CASE WHEN won THEN datetime({epochMillis: $now_ms}) + duration({seconds: t.refresh_every_seconds})
                             ELSE t.refresh_next_at END,
    t.refresh_last_at = CASE WHEN won THEN datetime({epochMillis: $now_ms}) ELSE t.refresh_last_at END,
    t.refresh_claim = CASE WHEN won THEN $token ELSE t.refresh_claim END
RETURN won, t.id AS task_id, t.refresh_max_targets AS max_targets, t.refresh_max_pages AS max_pages,
       t.refresh_every AS every
