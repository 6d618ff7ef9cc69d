// mode: read
// The only statement that computes claim confidence (decision record 0003). Per claim: alpha/beta (Beta(1,1) prior,
// SUPPORTS → alpha, REFUTES → beta, weight nli_confidence or 1.0 when human-corrected, NEUTRAL adds nothing) and
// the three counts. An edge with `retracted: true` (its passage comes from a retracted paper, see
// retractions/retract_edges) is left out of the weights and the counts, exactly as if it were absent. A claim Lyra wrote carries these sums (evidence_support_weight, evidence_refute_weight,
// evidence_supports, evidence_refutes, evidence_neutrals), kept by every Lyra write of its stance edges in the same
// transaction, so they are read from the node; a claim missing any of them (written by plain Cypher, or before the
// sums existed) is aggregated from its edges here, exactly as the sums are defined. The claims: those of
// $claim_ids (a page of get_materials), or, when $claim_ids is null, every claim of $task_id (adopted ones only
// unless $include_not_adopted), in no particular order. Returns one row: a list per column, one entry per claim.
// Params: $task_id, $claim_ids, $include_not_adopted
CALL () {
  UNWIND coalesce($claim_ids, []) AS cid
  MATCH (c:Claim {id: cid})
  RETURN c
  UNION ALL
  MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
  WHERE $claim_ids IS NULL
    AND ($include_not_adopted OR coalesce(c.claim_adoption_status, 'adopted') = 'adopted')
  RETURN c
}
WITH c, [c.evidence_support_weight, c.evidence_refute_weight, c.evidence_supports, c.evidence_refutes,
         c.evidence_neutrals] AS stored
WITH c, CASE WHEN none(x IN stored WHERE x IS NULL) THEN stored END AS stored
CALL (c, stored) {
  // only for a claim without stored sums: one pass over its edges
  WITH c WHERE stored IS NULL
  OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-()
  WITH CASE WHEN (r.retracted = true OR r.superseded = true) THEN null ELSE type(r) END AS rel, CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE toFloat(r.nli_confidence) END AS weight
  RETURN [sum(CASE rel WHEN 'SUPPORTS' THEN weight ELSE 0.0 END),
          sum(CASE rel WHEN 'REFUTES' THEN weight ELSE 0.0 END),
          count(CASE rel WHEN 'SUPPORTS' THEN 1 END),
          count(CASE rel WHEN 'REFUTES' THEN 1 END),
          count(CASE rel WHEN 'NEUTRAL' THEN 1 END)] AS computed
}
WITH c, coalesce(stored, computed) AS s
// one row of parallel lists (one entry per claim, in the same order): streaming one record per claim cost the driver
// far more than the query itself
RETURN collect(c.id) AS claim_id, collect(1.0 + toFloat(s[0])) AS alpha, collect(1.0 + toFloat(s[1])) AS beta,
       collect(toInteger(s[2])) AS supports_count, collect(toInteger(s[3])) AS refutes_count,
       collect(toInteger(s[4])) AS neutral_count
