// mode: write
// Claims are task-scoped: always new, labelled Claim and Task_<task_id>, hung under their Task.
// Params: $task_id, $task_label (built from the validated id), $rows = [{id, text}]
MATCH (t:Task {id: $task_id})
UNWIND $rows AS row
CREATE (c:Claim {id: row.id, task_id: $task_id, text: row.text, claim_adoption_status: 'adopted',
                 created_at: datetime()})
SET c:$($task_label)
CREATE (t)-[:HAS_CLAIM]->(c)
SET t.updated_at = datetime()
RETURN c.id AS id
