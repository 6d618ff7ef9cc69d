// mode: read
// Check (`lyra graph rescore --check`): each claim's stored sums against the same sums recomputed from its stance
// edges now (materials/claim_scores defines them). Returns how many claims were checked, how many carry no stored
// sums (they are aggregated on read: correct, only slower), and up to $limit claims whose stored sums differ (counts
// unequal, or a weight off by more than $tolerance), stored and recomputed side by side, plus how many differ in
// all. Claims of $task_id, or every claim when $task_id is null.
// Params: $task_id, $tolerance, $limit
CALL () {
  MATCH (c:Claim {task_id: $task_id})
  RETURN c
  UNION ALL
  MATCH (c:Claim)
  WHERE $task_id IS NULL
  RETURN c
}
CALL (c) {
  OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-()
  WITH CASE WHEN (r.retracted = true OR r.superseded = true) THEN null ELSE type(r) END AS rel, CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE toFloat(r.nli_confidence) END AS weight
  RETURN sum(CASE rel WHEN 'SUPPORTS' THEN weight ELSE 0.0 END) AS support_weight,
         sum(CASE rel WHEN 'REFUTES' THEN weight ELSE 0.0 END) AS refute_weight,
         count(CASE rel WHEN 'SUPPORTS' THEN 1 END) AS supports,
         count(CASE rel WHEN 'REFUTES' THEN 1 END) AS refutes,
         count(CASE rel WHEN 'NEUTRAL' THEN 1 END) AS neutrals
}
WITH c, support_weight, refute_weight, supports, refutes, neutrals,
     [c.evidence_support_weight, c.evidence_refute_weight, c.evidence_supports, c.evidence_refutes,
      c.evidence_neutrals] AS stored
WITH c, support_weight, refute_weight, supports, refutes, neutrals, stored,
     any(x IN stored WHERE x IS NULL) AS unstored
WITH c, support_weight, refute_weight, supports, refutes, neutrals, stored, unstored,
     NOT unstored AND NOT (abs(stored[0] - support_weight) <= $tolerance
                           AND abs(stored[1] - refute_weight) <= $tolerance
                           AND stored[2] = supports AND stored[3] = refutes AND stored[4] = neutrals) AS differs
WITH count(c) AS checked, count(CASE WHEN unstored THEN 1 END) AS unstored,
     count(CASE WHEN differs THEN 1 END) AS differing,
     collect(CASE WHEN differs THEN {claim_id: c.id, task_id: c.task_id,
                                    stored: {support_weight: stored[0], refute_weight: stored[1], supports: stored[2],
                                             refutes: stored[3], neutrals: stored[4]},
                                    recomputed: {support_weight: support_weight, refute_weight: refute_weight,
                                                 supports: supports, refutes: refutes, neutrals: neutrals}} END)
       AS differences
RETURN checked, unstored, differing, differences[..$limit] AS differences
