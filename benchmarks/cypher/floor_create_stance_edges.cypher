// mode: write
// The write floor of `python -m benchmarks.scale --floor`: stance edges written blindly, with no lock on the claim, no check
// for an edge the pair already has and no stored sums (the properties are those of evidence/create_stance_edges).
// Not a write path of Lyra: it would break the one-edge-per-pair rule and the claims' stored sums, and exists only
// to show what they cost. Params: $rows = [{id, fragment_id, claim_id, relation, nli_label, nli_confidence,
// source_domain_category}]
UNWIND $rows AS row
MATCH (f:Fragment {id: row.fragment_id})
MATCH (c:Claim {id: row.claim_id})
CREATE (f)-[r:$(row.relation) {id: row.id, nli_label: row.nli_label, nli_confidence: row.nli_confidence,
                                edge_human_corrected: false, created_at: datetime(),
                                source_domain_category: row.source_domain_category}]->(c)
RETURN r.id AS id
