// mode: write
// A learned rule made from an approved proposal. Params: $row (the rule's properties), $proposal_id
MATCH (p:Proposal {id: $proposal_id})
CREATE (r:LearnedRule)-[:FROM_PROPOSAL]->(p)
SET r = $row, r.activated_at = datetime()
RETURN r.id AS id
