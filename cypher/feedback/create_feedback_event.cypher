// mode: write
// Every feedback action is appended to the audit log (FeedbackEvent nodes are only ever created).
// reviewer_id: who the request named (null: anonymous); door: the door it came through (mcp, rest, cli; null for a
// call from Python)
// Params: $id, $task_id, $action, $args (JSON), $result (JSON), $reviewer_id, $door
CREATE (e:FeedbackEvent {id: $id, task_id: $task_id, action: $action, args: $args, result: $result,
                         reviewer_id: $reviewer_id, door: $door, created_at: datetime()})
RETURN e.id AS id
