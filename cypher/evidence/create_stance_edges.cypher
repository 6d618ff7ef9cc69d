// mode: write
// One stance edge per (fragment, claim): rows grouped by claim; each claim is locked once and its existing stance
// edges read once, so concurrent writers cannot both create an edge for the same pair and a pair that already has
// an edge (of any of the three types) is left unchanged. Returns the ids of the edges created; the caller reads
// the existing ones with evidence/stance_edges_for_pairs.
// nli_confidence_raw / nli_calibrator_version are set only when a calibrator mapped the judge's confidence.
// Params: $claims = [{claim_id, edges: [{id, fragment_id, relation, nli_label, nli_confidence, nli_confidence_raw,
//                                        nli_calibrator_version, source_domain_category, target_domain_category,
//                                        cause_id}]}]
UNWIND $claims AS grp
MATCH (c:Claim {id: grp.claim_id})
CALL apoc.lock.nodes([c])
WITH c, grp, COLLECT { MATCH (c)<-[:SUPPORTS|REFUTES|NEUTRAL]-(known:Fragment) RETURN known.id } AS known
UNWIND grp.edges AS row
WITH c, row
  WHERE NOT row.fragment_id IN known
MATCH (f:Fragment {id: row.fragment_id})
CREATE (f)-[r:$(row.relation) {id: row.id, nli_label: row.nli_label, nli_confidence: row.nli_confidence,
                                edge_human_corrected: false, created_at: datetime()}]->(c)
SET r.nli_confidence_raw = row.nli_confidence_raw, r.nli_calibrator_version = row.nli_calibrator_version,
    r.source_domain_category = row.source_domain_category, r.target_domain_category = row.target_domain_category,
    r.cause_id = row.cause_id
RETURN row.id AS id
