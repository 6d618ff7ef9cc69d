// mode: read
// The only statement that computes claim confidence (seed 003 decision 13: computed now, from every stance edge).
// Per claim: alpha/beta aggregated from all of its stance edges (Beta(1,1) prior, SUPPORTS → alpha, REFUTES → beta,
// weight nli_confidence or 1.0 when human-corrected, NEUTRAL adds nothing) and the three counts; nothing else is
// read, so scoring every claim of a large task stays one pass over its edges. The claims: those of $claim_ids (a
// page of get_materials), or, when $claim_ids is null, every claim of $task_id (adopted ones only unless
// $include_not_adopted), in no particular order.
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
CALL (c) {
  OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-()
  WITH type(r) AS rel, CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE toFloat(r.nli_confidence) END AS weight
  RETURN sum(CASE rel WHEN 'SUPPORTS' THEN weight ELSE 0.0 END) AS support_weight,
         sum(CASE rel WHEN 'REFUTES' THEN weight ELSE 0.0 END) AS refute_weight,
         count(CASE rel WHEN 'SUPPORTS' THEN 1 END) AS supports_count,
         count(CASE rel WHEN 'REFUTES' THEN 1 END) AS refutes_count,
         count(CASE rel WHEN 'NEUTRAL' THEN 1 END) AS neutral_count
}
RETURN c.id AS claim_id, 1.0 + support_weight AS alpha, 1.0 + refute_weight AS beta, supports_count, refutes_count,
       neutral_count
