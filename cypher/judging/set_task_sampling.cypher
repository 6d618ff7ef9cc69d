// mode: write
// A task's push-door option (config.assistant_sampling): whether judge_with_assistant may send its passages to the
// calling MCP client's model (docs/concepts/assistant-judge.md). No row when the task does not exist.
// Params: $task_id, $enabled
MATCH (t:Task {id: $task_id})
SET t.assistant_sampling = $enabled, t.updated_at = datetime()
RETURN t.id AS task_id
