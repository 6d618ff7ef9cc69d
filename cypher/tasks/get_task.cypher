// mode: read
// One task's stored properties, as they are (TaskRepository reads them tolerantly: a Task written by hand in
// Neo4j Browser may hold any status and string timestamps). No row when the task does not exist.
// Params: $task_id
MATCH (t:Task {id: $task_id})
RETURN t.id AS id, t.hypothesis AS hypothesis, t.status AS status, t.created_at AS created_at,
       t.updated_at AS updated_at
