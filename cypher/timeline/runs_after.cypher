// mode: read
// What the MCP changes watcher polls (docs/concepts/living-evidence.md): per watched task, the task's run counter
// (latest: t.run_seq, 0 for a task with no numbered run or none at all) and its runs numbered above the watcher's
// high-water mark (after), oldest first, at most $limit, with how many claims each moved. A mark of null asks only
// for the counter (the baseline when a task gets its first listener). Run numbers are given in commit order
// (timeline/record_run), so a run committed late is never below a mark already passed.
// Params: $marks = [{task_id, after}], $limit
UNWIND $marks AS mark
OPTIONAL MATCH (t:Task {id: mark.task_id})
RETURN mark.task_id AS task_id, coalesce(t.run_seq, 0) AS latest,
       CASE WHEN mark.after IS NULL THEN [] ELSE COLLECT {
         MATCH (r:Run {task_id: mark.task_id})
           WHERE r.seq > mark.after
         RETURN r {run_id: r.id, seq: r.seq, claims_moved: coalesce(r.claims_moved, 0)}
         ORDER BY r.seq
         LIMIT $limit
       } END AS runs
