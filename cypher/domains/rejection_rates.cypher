// mode: read
// Claim-based rejection rates per domain (seed 003 decision 18). A domain's claims are those its pages give
// SUPPORTS/REFUTES evidence for, plus those it is a rejected source for. Security rejections: SOURCE_REJECTED
// (dangerous pattern); manual rejections: claims a human set to not_adopted. The combined rate counts a claim
// rejected both ways once. Params: $domains (null = every domain)
MATCH (d:Domain)
WHERE $domains IS NULL OR d.name IN $domains
CALL (d) {
  OPTIONAL MATCH (d)<-[:IN_DOMAIN]-(:Page)<-[:EXTRACTED_FROM]-(:Fragment)-[:SUPPORTS|REFUTES]->(c:Claim)
  RETURN collect(DISTINCT c) AS evidenced
}
CALL (d) {
  OPTIONAL MATCH (d)<-[:SOURCE_REJECTED]-(s:Claim)
  RETURN collect(DISTINCT s) AS security
}
WITH d, security, evidenced + [s IN security WHERE NOT s IN evidenced] AS claims
WITH d, claims, security, [c IN claims WHERE c.claim_adoption_status = 'not_adopted'] AS manual
WITH d, claims, security, manual, security + [m IN manual WHERE NOT m IN security] AS rejected
WHERE size(claims) > 0
RETURN d.name AS domain, size(claims) AS claims, size(security) AS security_rejected_claims,
       size(manual) AS manual_rejected_claims, size(rejected) AS rejected_claims,
       toFloat(size(security)) / size(claims) AS domain_claim_security_rejection_rate,
       toFloat(size(manual)) / size(claims) AS domain_claim_manual_rejection_rate,
       toFloat(size(rejected)) / size(claims) AS domain_claim_combined_rejection_rate,
       coalesce(d.domain_blocked, false) AS blocked
ORDER BY domain
