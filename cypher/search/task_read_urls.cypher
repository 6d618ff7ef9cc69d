// mode: read
// Which of the given URLs are pages this task has read already: a fragment of the page carries a stance edge to one
// of the task's claims. A web search skips them instead of fetching them again (the task's graph grows search by search).
// Params: $task_id, $urls
UNWIND $urls AS url
MATCH (p:Page {url: url})
WHERE EXISTS {
  MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(:Claim)<-[:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment)-[:EXTRACTED_FROM]->(p)
}
RETURN collect(DISTINCT url) AS urls
