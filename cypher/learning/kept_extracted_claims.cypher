// mode: read
// Claims the LLM extracted that are still adopted (reviewers kept them), newest first, with the passage and topic
// they were extracted from: the regression set a claim-extraction rule is measured on.
// Params: $exclude_ids (claim ids to leave out), $limit
MATCH (t:Task)-[:HAS_CLAIM]->(c:Claim)-[:EXTRACTED_FROM]->(:Fragment)
WHERE coalesce(c.claim_adoption_status, 'adopted') = 'adopted' AND NOT c.id IN $exclude_ids
WITH DISTINCT t, c
ORDER BY c.created_at DESC, c.id
LIMIT $limit
RETURN c.id AS claim_id, c.text AS claim, t.hypothesis AS topic,
       COLLECT { MATCH (c)-[:EXTRACTED_FROM]->(f:Fragment) RETURN f.text ORDER BY f.id LIMIT 1 }[0] AS passage
