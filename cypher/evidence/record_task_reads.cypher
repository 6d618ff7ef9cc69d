// mode: write
// The pages a task read: (Task)-[:READ]->(Page), one relationship per task and page, written when an ingest of the
// task keeps the page (local file, fetched URL, paper abstract). Pages are global and shared by tasks; READ is what
// credits a fragment to *this* task's sources: evidence items name only pages their claim's task read, and the
// task's candidate fragments are the fragments of those pages. first_read_at / last_read_at / cause_id (the ingest).
// Params: $task_id, $page_ids, $cause_id
MATCH (t:Task {id: $task_id})
UNWIND $page_ids AS pid
MATCH (p:Page {id: pid})
MERGE (t)-[r:READ]->(p)
  ON CREATE SET r.first_read_at = datetime(), r.cause_id = $cause_id
SET r.last_read_at = datetime()
RETURN count(r) AS pages
