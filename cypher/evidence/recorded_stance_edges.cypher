// mode: read
// Which of these (fragment, claim) pairs already have their stance edge, and its type: ingest judges only the
// others (the edge is the pair's one judgement, whichever worker wrote it).
// Params: $rows = [{fragment_id, claim_id}]
UNWIND $rows AS pair
MATCH (f:Fragment {id: pair.fragment_id})-[r:SUPPORTS|REFUTES|NEUTRAL]->(c:Claim {id: pair.claim_id})
RETURN f.id AS fragment_id, c.id AS claim_id, type(r) AS relation
