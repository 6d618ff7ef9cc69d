// mode: read
// Proposals by id with their evidence record ids and their reviews (oldest first). Params: $ids
MATCH (p:Proposal)
WHERE p.id IN $ids
OPTIONAL MATCH (p)-[:EVIDENCE]->(r:FeedbackRecord)
WITH p, collect(r.id) AS evidence_ids
OPTIONAL MATCH (v:ProposalReview)-[:REVIEWS]->(p)
WITH p, evidence_ids, v ORDER BY v.at
WITH p, evidence_ids,
     collect(CASE WHEN v IS NULL THEN null ELSE v {.decision, .reviewer_id, .reason, .override,
                                                  at: toString(v.at)} END) AS reviews
RETURN p {.*, created_at: toString(p.created_at)} AS proposal, evidence_ids, reviews
