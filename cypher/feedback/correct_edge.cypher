// mode: write
// edge_correct (decision record 0006): the edge is marked human-reviewed. When the relation changes, the relationship is
// re-typed: a new one of the correct type replaces it with the same id and properties, nli_label becomes the
// correct label and nli_confidence 1.0, and an NLICorrection sample keeps what was predicted (only then;
// predicted_by says whether the model or an earlier correction made the replaced label).
// The claim's stored sums (see materials/claim_scores) follow in the same statement, under a lock on the claim: the
// edge's old weight (1.0 if already corrected, else nli_confidence) leaves the sum of its old type and 1.0 joins
// the sum of the new type (SUPPORTS and REFUTES only), the counts move with the type; a claim without stored sums
// keeps none. The edge must point at a claim of the task.
// Judges: the edge becomes the human judge's ($judge = 'human:<reviewer>', judge_rank 2, judged_at now,
// instructions_version 'feedback'); human is the highest rank, so a correction always applies (the same rank
// replaces). An edge the offline judge drew keeps that judge's verdict as offline_relation / offline_confidence (an
// edge an assistant drew already carries them). A (:Judgment) record of the task keeps what changed and by whom.
// The Judgment names the door the correction came through ($door: mcp, rest, cli; null for a call from Python).
// Params: $task_id, $edge_id, $new_type, $new_label, $reason, $correction_id, $judge, $judgment_id, $door
// The edge is read again once the claim is locked: a concurrent writer (an assistant's submit_judgments, another
// correction) may have re-typed it meanwhile, and this statement must apply to what that writer committed.
MATCH (:Fragment)-[:SUPPORTS|REFUTES|NEUTRAL {id: $edge_id}]->(locked:Claim)<-[:HAS_CLAIM]-(:Task {id: $task_id})
WITH DISTINCT locked
CALL apoc.lock.nodes([locked])
MATCH (f:Fragment)-[r:SUPPORTS|REFUTES|NEUTRAL {id: $edge_id}]->(c:Claim)
WHERE c = locked
WITH f, r, c, type(r) AS old_type, properties(r) AS props
WITH f, r, c, old_type, props,
     CASE WHEN props.edge_human_corrected = true THEN 1.0 ELSE coalesce(toFloat(props.nli_confidence), 0.0) END
       AS old_weight,
     CASE WHEN coalesce(props.judge_rank, 0) = 0 THEN old_type ELSE props.offline_relation END AS offline_relation,
     CASE WHEN coalesce(props.judge_rank, 0) = 0 THEN props.nli_confidence ELSE props.offline_confidence END
       AS offline_confidence
CALL (f, r, c, old_type, props) {
  WITH f, r, c, old_type, props
  WHERE old_type = $new_type
  SET r.edge_human_corrected = true, r.edge_corrected_at = datetime(), r.edge_correction_reason = $reason
  RETURN r AS edge
  UNION
  WITH f, r, c, old_type, props
  WHERE old_type <> $new_type
  CREATE (f)-[n:$($new_type)]->(c)
  SET n = props
  SET n.nli_label = $new_label, n.nli_confidence = 1.0, n.edge_human_corrected = true,
      n.edge_corrected_at = datetime(), n.edge_correction_reason = $reason,
      n.edge_previous_relation = old_type
  DELETE r
  RETURN n AS edge
}
SET edge.judge = $judge, edge.judge_rank = 2, edge.judged_at = datetime(), edge.instructions_version = 'feedback',
    edge.offline_relation = offline_relation, edge.offline_confidence = offline_confidence
// a retracted edge (retractions/retract_edges) stays retracted whatever its relation: it moves no sum or count
WITH f, edge, c, old_type, props, old_weight,
     CASE WHEN (props.retracted = true OR props.superseded = true) THEN null ELSE old_type END AS old_rel,
     CASE WHEN (props.retracted = true OR props.superseded = true) THEN null ELSE $new_type END AS new_rel
CREATE (:Judgment {id: $judgment_id, edge_id: $edge_id, claim_id: c.id, fragment_id: f.id, task_id: $task_id,
                   judge: $judge, judge_rank: 2, relation: $new_type, confidence: 1.0, rationale: $reason,
                   previous_relation: old_type, previous_judge: props.judge, previous_confidence: props.nli_confidence,
                   at: datetime(), instructions_version: 'feedback', door: $door})
SET c.evidence_support_weight = c.evidence_support_weight - CASE old_rel WHEN 'SUPPORTS' THEN old_weight ELSE 0.0 END
      + CASE new_rel WHEN 'SUPPORTS' THEN 1.0 ELSE 0.0 END,
    c.evidence_refute_weight = c.evidence_refute_weight - CASE old_rel WHEN 'REFUTES' THEN old_weight ELSE 0.0 END
      + CASE new_rel WHEN 'REFUTES' THEN 1.0 ELSE 0.0 END,
    c.evidence_supports = c.evidence_supports - CASE old_rel WHEN 'SUPPORTS' THEN 1 ELSE 0 END
      + CASE new_rel WHEN 'SUPPORTS' THEN 1 ELSE 0 END,
    c.evidence_refutes = c.evidence_refutes - CASE old_rel WHEN 'REFUTES' THEN 1 ELSE 0 END
      + CASE new_rel WHEN 'REFUTES' THEN 1 ELSE 0 END,
    c.evidence_neutrals = c.evidence_neutrals - CASE old_rel WHEN 'NEUTRAL' THEN 1 ELSE 0 END
      + CASE new_rel WHEN 'NEUTRAL' THEN 1 ELSE 0 END
// a sum with no edge left is exactly zero (no rounding residue of the subtractions)
SET c.evidence_support_weight = CASE WHEN c.evidence_supports = 0 THEN 0.0 ELSE c.evidence_support_weight END,
    c.evidence_refute_weight = CASE WHEN c.evidence_refutes = 0 THEN 0.0 ELSE c.evidence_refute_weight END
FOREACH (_ IN CASE WHEN old_type <> $new_type THEN [1] ELSE [] END |
  CREATE (:NLICorrection {id: $correction_id, edge_id: $edge_id, task_id: $task_id, premise: f.text,
                          hypothesis: c.text, predicted_label: toLower(old_type),
                          predicted_confidence: coalesce(props.nli_confidence_raw, props.nli_confidence),
                          predicted_by: CASE WHEN props.edge_previous_relation IS NULL THEN 'model' ELSE 'human' END,
                          correct_label: toLower($new_type),
                          reason: $reason, corrected_at: datetime()}))
RETURN edge.id AS edge_id, toLower(old_type) AS previous_relation, toLower(type(edge)) AS relation,
       edge.nli_confidence AS nli_confidence, old_type <> $new_type AS changed, c.id AS claim_id
