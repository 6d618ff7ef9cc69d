// mode: read
// A claim's domains, as in domains/rejection_rates (decision record 0008): the domains of the pages it was
// extracted from, plus the domains it is a rejected source for (SOURCE_REJECTED). Domains that only give it
// SUPPORTS/REFUTES evidence are not among them; a claim a person wrote has none but the latter. Used to re-check
// those domains' rejection rates after the claim is rejected or restored. Params: $claim_id
OPTIONAL MATCH (c:Claim {id: $claim_id})
CALL (c) {
  OPTIONAL MATCH (c)-[:EXTRACTED_FROM]->(:Fragment)-[:EXTRACTED_FROM]->(:Page)-[:IN_DOMAIN]->(d:Domain)
  RETURN collect(DISTINCT d.name) AS sources
}
CALL (c) {
  OPTIONAL MATCH (c)-[:SOURCE_REJECTED]->(r:Domain)
  RETURN collect(DISTINCT r.name) AS security
}
RETURN sources + [name IN security WHERE NOT name IN sources] AS domains
