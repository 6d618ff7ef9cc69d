// mode: read
// Claim-based rejection rates per domain (decision record 0008). A domain's claims are the claims extracted from
// its pages, (Claim)-[:EXTRACTED_FROM]->(Fragment)-[:EXTRACTED_FROM]->(Page)-[:IN_DOMAIN]->(Domain), plus the
// claims it is a rejected source for. Stance edges do not make a claim a domain's claim: a page that supports or
// refutes a claim did not assert it (refuting a rejected hypothesis is right, not a fault), and a claim a person
// wrote has no source domain at all.
// Security rejections: SOURCE_REJECTED (the domain served a document with a dangerous pattern while the claim's
// task was fetched; see domains/record_security_finding). Manual rejections: the domain's extracted claims a human
// set to not_adopted — a rejected claim the domain only serves as a security-rejected source for is counted there,
// never here. The combined rate counts a claim rejected both ways once. Also returned: the mark set on domains
// whose category is not blocked automatically (domains/flag_rejection_rate).
// Params: $domains (null = every domain)
MATCH (d:Domain)
WHERE $domains IS NULL OR d.name IN $domains
CALL (d) {
  OPTIONAL MATCH (d)<-[:IN_DOMAIN]-(:Page)<-[:EXTRACTED_FROM]-(:Fragment)<-[:EXTRACTED_FROM]-(c:Claim)
  RETURN collect(DISTINCT c) AS extracted
}
CALL (d) {
  OPTIONAL MATCH (d)<-[:SOURCE_REJECTED]-(s:Claim)
  RETURN collect(DISTINCT s) AS security
}
WITH d, security, extracted + [s IN security WHERE NOT s IN extracted] AS claims,
     [c IN extracted WHERE c.claim_adoption_status = 'not_adopted'] AS manual
WITH d, claims, security, manual, security + [m IN manual WHERE NOT m IN security] AS rejected
WHERE size(claims) > 0
RETURN d.name AS domain, size(claims) AS claims, size(security) AS security_rejected_claims,
       size(manual) AS manual_rejected_claims, size(rejected) AS rejected_claims,
       toFloat(size(security)) / size(claims) AS domain_claim_security_rejection_rate,
       toFloat(size(manual)) / size(claims) AS domain_claim_manual_rejection_rate,
       toFloat(size(rejected)) / size(claims) AS domain_claim_combined_rejection_rate,
       coalesce(d.domain_blocked, false) AS blocked,
       coalesce(d.domain_rejection_flagged, false) AS domain_rejection_flagged,
       d.domain_rejection_flagged_rate AS domain_rejection_flagged_rate,
       d.domain_rejection_flagged_claims AS domain_rejection_flagged_claims,
       d.domain_rejection_flagged_at AS domain_rejection_flagged_at
ORDER BY domain
