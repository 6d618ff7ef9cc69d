// mode: read
// The judging queues (next_judgments, review_queue): the stance edges of the task's adopted claims whose judge
// ranks at most $max_rank, with what the policies order by: the edge's weight in its claim's confidence (1.0 when
// human-corrected, else nli_confidence), the offline judge's own confidence (its raw probability when calibrated),
// its calibrated probability of the label it drew (nli_confidence: what `impact` takes as P(label)), whether the
// edge is out of the sums (retracted, or superseded: decision record 0016; it counts for nothing, whatever its
// verdict; the column keeps the name retracted),
// the judge, the offline verdict an assistant's verdict replaced, whether the passage was flagged when an assistant
// judged it, and whether an unexpired ticket of the task holds the edge (it is out for judging). Params: $task_id,
// $max_rank
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
WHERE coalesce(c.claim_adoption_status, 'adopted') = 'adopted'
MATCH (f:Fragment)-[r:SUPPORTS|REFUTES|NEUTRAL]->(c)
WHERE coalesce(r.judge_rank, 0) <= $max_rank
RETURN r.id AS edge_id, c.id AS claim_id, c.text AS claim_text, f.id AS fragment_id, type(r) AS relation,
       CASE WHEN (r.retracted = true OR r.superseded = true) THEN 0.0 WHEN r.edge_human_corrected = true THEN 1.0
            ELSE coalesce(toFloat(r.nli_confidence), 0.0) END AS weight,
       toFloat(coalesce(r.nli_confidence_raw, r.nli_confidence)) AS offline_confidence,
       toFloat(r.nli_confidence) AS label_probability, coalesce(r.retracted = true OR r.superseded = true, false) AS retracted,
       coalesce(r.judge, 'offline:unknown') AS judge, coalesce(r.judge_rank, 0) AS judge_rank,
       r.offline_relation AS offline_relation, coalesce(r.judge_passage_flagged, false) AS flagged,
       EXISTS { MATCH (t:JudgingTicket {task_id: $task_id, edge_id: r.id}) WHERE t.expires_at > datetime() }
         AS ticketed
ORDER BY r.id
