// mode: read
// The domains whose pages give SUPPORTS/REFUTES evidence for a claim (to re-check their rejection rates after a
// claim is rejected). Params: $claim_id
MATCH (:Claim {id: $claim_id})<-[:SUPPORTS|REFUTES]-(:Fragment)-[:EXTRACTED_FROM]->(:Page)-[:IN_DOMAIN]->(d:Domain)
RETURN collect(DISTINCT d.name) AS domains
