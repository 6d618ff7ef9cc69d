// mode: write
// transactions: auto
// Repair (`lyra graph rescore`): recompute every claim's stored sums from its stance edges, as
// materials/claim_scores defines them, and store them (a claim without them gets them). For graphs whose stance
// edges were edited by hand, and to store the sums of claims written before they existed. Each claim is locked while
// its edges are read, so a concurrent Lyra write waits. Claims of $task_id, or every claim when $task_id is null.
// Returns how many claims were rescored, how many had no stored sums and how many had different ones (counts
// unequal, or a weight off by more than $tolerance).
// Params: $task_id, $tolerance, $batch_size
CALL () {
  MATCH (c:Claim {task_id: $task_id})
  RETURN c
  UNION ALL
  MATCH (c:Claim)
  WHERE $task_id IS NULL
  RETURN c
}
CALL (c) {
  CALL apoc.lock.nodes([c])
  OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-()
  WITH c, CASE WHEN (r.retracted = true OR r.superseded = true) THEN null ELSE type(r) END AS rel,
       CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE toFloat(r.nli_confidence) END AS weight
  WITH c, sum(CASE rel WHEN 'SUPPORTS' THEN weight ELSE 0.0 END) AS support_weight,
       sum(CASE rel WHEN 'REFUTES' THEN weight ELSE 0.0 END) AS refute_weight,
       count(CASE rel WHEN 'SUPPORTS' THEN 1 END) AS supports,
       count(CASE rel WHEN 'REFUTES' THEN 1 END) AS refutes,
       count(CASE rel WHEN 'NEUTRAL' THEN 1 END) AS neutrals
  WITH c, support_weight, refute_weight, supports, refutes, neutrals,
       [c.evidence_support_weight, c.evidence_refute_weight, c.evidence_supports, c.evidence_refutes,
        c.evidence_neutrals] AS stored
  WITH c, support_weight, refute_weight, supports, refutes, neutrals, stored,
       any(x IN stored WHERE x IS NULL) AS unstored
  SET c.evidence_support_weight = support_weight, c.evidence_refute_weight = refute_weight,
      c.evidence_supports = supports, c.evidence_refutes = refutes, c.evidence_neutrals = neutrals
  RETURN unstored,
         NOT unstored AND NOT (abs(stored[0] - support_weight) <= $tolerance
                               AND abs(stored[1] - refute_weight) <= $tolerance
                               AND stored[2] = supports AND stored[3] = refutes AND stored[4] = neutrals) AS differs
} IN TRANSACTIONS OF $batch_size ROWS
RETURN count(*) AS claims, count(CASE WHEN unstored THEN 1 END) AS unstored,
       count(CASE WHEN differs THEN 1 END) AS differing
