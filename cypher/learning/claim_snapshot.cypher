// mode: read
// What a reviewed claim is, for its feedback record: its text, the task's hypothesis (the topic it was extracted
// for), whether the LLM extracted it (it has source passages) and, if so, the first of those passages and the
// learned rule-set version of claim extraction it was extracted under.
// Params: $task_id, $claim_id
MATCH (t:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim {id: $claim_id})
RETURN c.id AS claim_id, c.text AS hypothesis, t.hypothesis AS topic,
       COLLECT { MATCH (c)-[:EXTRACTED_FROM]->(f:Fragment) RETURN f.text ORDER BY f.id LIMIT 1 }[0] AS premise,
       EXISTS { (c)-[:EXTRACTED_FROM]->(:Fragment) } AS extracted,
       c.extraction_rules_version AS rules_version
