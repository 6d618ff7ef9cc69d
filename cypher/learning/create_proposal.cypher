// mode: write
// A proposal with its evidence records (EVIDENCE relationships). Params: $row (the proposal's properties),
// $evidence_ids
CREATE (p:Proposal)
SET p = $row, p.status = 'pending', p.created_at = datetime()
WITH p
UNWIND $evidence_ids AS rid
MATCH (r:FeedbackRecord {id: rid})
CREATE (p)-[:EVIDENCE]->(r)
RETURN p.id AS id, count(r) AS evidence
