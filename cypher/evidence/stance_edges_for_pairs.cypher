// mode: read
// The stance edge (id, type) of each given (fragment, claim) pair that has one.
// Params: $pairs = [{fragment_id, claim_id}]
UNWIND $pairs AS pair
MATCH (:Fragment {id: pair.fragment_id})-[r:SUPPORTS|REFUTES|NEUTRAL]->(:Claim {id: pair.claim_id})
RETURN pair.fragment_id AS fragment_id, pair.claim_id AS claim_id, r.id AS id, type(r) AS relation
