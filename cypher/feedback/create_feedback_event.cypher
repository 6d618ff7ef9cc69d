// mode: write
// Every feedback action is appended to the audit log (FeedbackEvent nodes are only ever created).
// Params: $id, $task_id, $action, $args (JSON), $result (JSON)
CREATE (e:FeedbackEvent {id: $id, task_id: $task_id, action: $action, args: $args, result: $result,
                         created_at: datetime()})
RETURN e.id AS id
