// mode: write
// Set or clear a task's refresh schedule (docs/concepts/living-evidence.md "Scheduled refreshes"). With
// $every_seconds null the schedule is removed; otherwise the task keeps the period, the refresh's budgets and when
// the next refresh is due: refresh_due_ms (epoch milliseconds, what cypher/schedule/claim_due_refreshes compares and
// claims) and refresh_next_at (the same moment as a datetime, for people). Returns the schedule as it is now (no row:
// no such task).
// Params: $task_id, $every (text such as '7d', or null), $every_seconds, $max_targets, $max_pages
MATCH (t:Task {id: $task_id})
SET t.refresh_every = $every,
    t.refresh_every_seconds = $every_seconds,
    t.refresh_max_targets = CASE WHEN $every_seconds IS NULL THEN null ELSE $max_targets END,
    t.refresh_max_pages = CASE WHEN $every_seconds IS NULL THEN null ELSE $max_pages END,
    t.refresh_due_ms = CASE WHEN $every_seconds IS NULL THEN null
                            ELSE datetime().epochMillis + $every_seconds * 1000 END,
    t.refresh_next_at = CASE WHEN $every_seconds IS NULL THEN null
                             ELSE datetime() + duration({seconds: $every_seconds}) END,
    t.refresh_claim = null
RETURN t.id AS task_id, t.refresh_every AS every, t.refresh_every_seconds AS every_seconds,
       t.refresh_max_targets AS max_targets, t.refresh_max_pages AS max_pages,
       toString(t.refresh_next_at) AS next_run_at, toString(t.refresh_last_at) AS last_run_at
