// mode: write
// Consolidation: records of the same pattern join a pending proposal as more evidence. Params: $id, $evidence_ids
MATCH (p:Proposal {id: $id, status: 'pending'})
UNWIND $evidence_ids AS rid
MATCH (r:FeedbackRecord {id: rid})
MERGE (p)-[:EVIDENCE]->(r)
RETURN p.id AS id, count(r) AS added
