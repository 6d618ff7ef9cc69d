// mode: write
// Soft clean-up: the task's pair leases (coverage/lease_pairs), left behind only by a worker that died mid-batch.
// Params: $task_id
MATCH (l:PairLease {task_id: $task_id})
DELETE l
RETURN count(*) AS leases
