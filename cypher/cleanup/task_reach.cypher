// mode: read
// What a task reaches before it is cleaned: counts of its claims and stance edges, and the ids of the fragments
// behind them and of the pages it read, their pages and the pages those cite or are cited by (candidates for hard
// clean-up once the task is gone).
// Params: $task_id
OPTIONAL MATCH (c:Claim {task_id: $task_id})
OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
WITH count(DISTINCT c) AS claims, count(r) AS stance_edges, collect(DISTINCT f) AS judged
// and the fragments of the pages the task read (a passage below its relevance floor has no edge)
CALL () {
  OPTIONAL MATCH (:Task {id: $task_id})-[:READ]->(:Page)<-[:EXTRACTED_FROM]-(g:Fragment)
  RETURN collect(DISTINCT g) AS read
}
WITH claims, stance_edges, judged + [g IN read WHERE NOT g IN judged] AS fragments
CALL (fragments) {
  UNWIND fragments AS f
  MATCH (f)-[:EXTRACTED_FROM]->(p:Page)
  OPTIONAL MATCH (p)-[:CITES]-(q:Page)
  WITH collect(DISTINCT p.id) AS direct, collect(DISTINCT q.id) AS linked
  RETURN direct + [x IN linked WHERE NOT x IN direct] AS page_ids
}
RETURN claims, stance_edges, [f IN fragments | f.id] AS fragment_ids, page_ids
