// mode: write
// A review of a pending proposal (append-only); the proposal is locked so two reviews cannot race. Returns the
// distinct reviewers who approved it so far. Params: $id, $review_id, $decision, $reviewer_id, $reason, $override
MATCH (p:Proposal {id: $id})
CALL apoc.lock.nodes([p])
WITH p
WHERE p.status = 'pending'
CREATE (v:ProposalReview {id: $review_id, proposal_id: $id, decision: $decision, reviewer_id: $reviewer_id,
                          reason: $reason, override: $override, at: datetime()})-[:REVIEWS]->(p)
WITH p
MATCH (a:ProposalReview {decision: 'approve'})-[:REVIEWS]->(p)
RETURN collect(DISTINCT a.reviewer_id) AS approvers
