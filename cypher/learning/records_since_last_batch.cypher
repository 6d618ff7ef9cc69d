// mode: read
// Stance corrections not yet evidence of any proposal (what the next batch of proposals reads).
MATCH (r:FeedbackRecord {component: 'stance', kind: 'correction'})
WHERE NOT (r)<-[:EVIDENCE]-(:Proposal)
RETURN count(r) AS records
