// mode: write
// What a refresh's re-check of known paper pages by their metadata found, kept on its run: papers checked,
// unchanged (the same abstract, whatever their version), changed (queued to be read again), failed
// (docs/concepts/living-evidence.md). Params: $task_id, $run_id, $counts = {checked, unchanged, changed, failed}
MATCH (r:Run {id: $run_id, task_id: $task_id})
SET r.papers_checked = $counts.checked, r.papers_unchanged = $counts.unchanged,
    r.papers_changed = $counts.changed, r.papers_failed = $counts.failed
RETURN r.id AS run_id
