// mode: write
// Take (or give back, with negative amounts) part of a task's sampling budget. Run after tasks/lock_task in the
// same transaction, so concurrent calls never spend more than the budget: the amounts are added only when the
// totals stay within $max_calls and $max_tokens (a give-back always fits). Returns whether they were added and the
// totals after. Params: $task_id, $calls, $tokens, $max_calls, $max_tokens
MATCH (t:Task {id: $task_id})
WITH t, coalesce(t.sampling_calls_used, 0) AS calls, coalesce(t.sampling_tokens_used, 0) AS tokens
WITH t, calls, tokens,
     ($calls <= 0 AND $tokens <= 0) OR (calls + $calls <= $max_calls AND tokens + $tokens <= $max_tokens) AS ok
SET t.sampling_calls_used = CASE WHEN ok THEN calls + $calls ELSE calls END,
    t.sampling_tokens_used = CASE WHEN ok THEN tokens + $tokens ELSE tokens END
RETURN ok, t.sampling_calls_used AS calls_used, t.sampling_tokens_used AS tokens_used
