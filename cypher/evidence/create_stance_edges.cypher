// mode: write
// One stance edge per (fragment, claim): an existing one (of any of the three types) is returned unchanged.
// The claim is locked first so concurrent writers cannot both create an edge for the same pair.
// nli_confidence_raw / nli_calibrator_version are set only when a calibrator mapped the judge's confidence.
// Params: $rows = [{id, fragment_id, claim_id, relation, nli_label, nli_confidence, nli_confidence_raw,
//                   nli_calibrator_version,
//                   source_domain_category, target_domain_category, cause_id}]
UNWIND $rows AS row
MATCH (f:Fragment {id: row.fragment_id})
MATCH (c:Claim {id: row.claim_id})
CALL apoc.lock.nodes([c])
OPTIONAL MATCH (f)-[old:SUPPORTS|REFUTES|NEUTRAL]->(c)
CALL (row, f, c, old) {
  WITH row, f, c, old
  WHERE old IS NULL
  CREATE (f)-[r:$(row.relation)]->(c)
  SET r.id = row.id, r.nli_label = row.nli_label, r.nli_confidence = row.nli_confidence,
      r.nli_confidence_raw = row.nli_confidence_raw, r.nli_calibrator_version = row.nli_calibrator_version,
      r.source_domain_category = row.source_domain_category,
      r.target_domain_category = row.target_domain_category,
      r.edge_human_corrected = false, r.cause_id = row.cause_id, r.created_at = datetime()
  RETURN r, true AS created
  UNION
  WITH row, f, c, old
  WHERE old IS NOT NULL
  RETURN old AS r, false AS created
}
RETURN row.id AS requested_id, r.id AS id, type(r) AS relation, created
