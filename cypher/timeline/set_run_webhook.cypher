// mode: write
// What the delivery of a run's webhook gave, kept on the run: webhook_status (delivered | failed), the attempts
// made, the last HTTP status and, when it failed, why. Params: $task_id, $run_id, $status, $attempts, $http_status,
// $error
MATCH (r:Run {id: $run_id, task_id: $task_id})
SET r.webhook_status = $status, r.webhook_attempts = $attempts, r.webhook_http_status = $http_status,
    r.webhook_error = $error, r.webhook_at = datetime()
RETURN r.id AS run_id
