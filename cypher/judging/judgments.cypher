// mode: read
// A task's judgment history, newest first: what each judgment changed and by whom. Also queryable from
// Neo4j Browser: MATCH (j:Judgment {task_id: '...'}) RETURN j ORDER BY j.at DESC. Params: $task_id, $limit
MATCH (j:Judgment {task_id: $task_id})
RETURN j {.*, at: toString(j.at)} AS judgment
ORDER BY j.at DESC, j.id
LIMIT $limit
