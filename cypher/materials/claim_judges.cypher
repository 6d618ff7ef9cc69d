// mode: read
// Per claim, the judges behind its stance edges and the verdicts the offline judge gave them (no confidence math
// here: lyra.models.confidence applies the formula of decision record 0003 to these verdicts).
// judges: one [judge, edges] per judge that drew a current edge of the claim (every stance edge, NEUTRAL and
// retracted ones included; an edge from before judges were recorded counts as offline:unknown).
// offline: one [relation, weight] per edge as the offline judge alone would have drawn it: an offline edge's own
// relation and nli_confidence; for an edge a higher judge (an assistant, a person) replaced, the offline verdict
// it replaced (offline_relation / offline_confidence on the edge, else the (:Judgment) history: the replaced verdict
// of the earliest Judgment of the edge whose previous judge was offline); an edge without an offline verdict (an
// assistant drew it first) and a retracted edge (which counts for nothing, see retractions/retract_edges) are left
// out. Returns one row: `claims`, one [claim_id, judges, offline] per claim. Params: $claim_ids
UNWIND $claim_ids AS cid
MATCH (c:Claim {id: cid})
OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment)
WITH c, r,
     CASE WHEN r IS NOT NULL AND coalesce(r.judge_rank, 0) > 0 AND r.offline_relation IS NULL THEN
       COLLECT {
         MATCH (j:Judgment {task_id: c.task_id, edge_id: r.id})
         WHERE j.previous_relation IS NOT NULL
           AND coalesce(j.previous_judge, 'offline:unknown') STARTS WITH 'offline:'
         WITH j ORDER BY j.at, j.id
         RETURN [j.previous_relation, j.previous_confidence]
       }[0]
     END AS replaced
WITH c, r,
     CASE WHEN r IS NULL OR (r.retracted = true OR r.superseded = true) THEN null
          WHEN coalesce(r.judge_rank, 0) = 0 THEN [type(r), toFloat(r.nli_confidence)]
          WHEN r.offline_relation IS NOT NULL THEN [r.offline_relation, toFloat(r.offline_confidence)]
          WHEN replaced IS NOT NULL THEN [replaced[0], toFloat(replaced[1])]
     END AS offline,
     CASE WHEN r IS NULL THEN null ELSE coalesce(r.judge, 'offline:unknown') END AS judge
WITH c, judge, count(judge) AS edges, collect(offline) AS offline
WITH c, collect(CASE WHEN judge IS NOT NULL THEN [judge, edges] END) AS judges,
     reduce(acc = [], xs IN collect(offline) | acc + xs) AS offline
RETURN collect([c.id, judges, offline]) AS claims
