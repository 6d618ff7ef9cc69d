// mode: read
// A task's push-door state: its option and the sampling budget it used so far (requests, estimated tokens).
// No row when the task does not exist. Params: $task_id
MATCH (t:Task {id: $task_id})
RETURN coalesce(t.assistant_sampling, false) AS enabled, coalesce(t.sampling_calls_used, 0) AS calls_used,
       coalesce(t.sampling_tokens_used, 0) AS tokens_used
