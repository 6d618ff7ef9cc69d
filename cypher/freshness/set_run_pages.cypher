// mode: write
// What a refresh's re-check of known pages found, kept on its run: pages checked, unchanged (304 or the same
// content hash), changed (queued to be read again), failed. Params: $task_id, $run_id, $counts = {checked,
// unchanged, changed, failed}
MATCH (r:Run {id: $run_id, task_id: $task_id})
SET r.pages_checked = $counts.checked, r.pages_unchanged = $counts.unchanged, r.pages_changed = $counts.changed,
    r.pages_failed = $counts.failed
RETURN r.id AS run_id
