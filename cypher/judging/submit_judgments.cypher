// mode: write
// submit_judgments: an assistant's verdicts, every item of one call in this one statement. Items are
// grouped by claim ($claims sorted by claim id, so concurrent writers lock claims in the same order); each claim of
// the task is locked (apoc.lock.nodes, as every writer of its stance edges does) and only then is each item's
// ticket and edge read, so authority is decided under the lock: an item applies only when its ticket is this task's
// and this claim's, unexpired, and the pair's edge is still the one the ticket saw (same id, relation, judge and
// judged_at; or still no edge), and the edge's judge_rank is at most $judge_rank (a lower judge never overwrites a
// higher one; the same rank replaces). Otherwise the item's status says why ('unknown', 'expired', 'stale',
// 'outranked') and nothing of it is written.
// An applied item: the edge keeps its id; when the relation changes it is re-typed (a new relationship of the new
// type takes its properties, the old one is deleted); a pair without an edge gets a new one ($item.new_edge_id).
// The edge becomes the judge's (judge, judge_rank, judged_at, instructions_version, judge_rationale,
// assistant_confidence); an offline verdict it replaces is kept as offline_relation / offline_confidence. Its
// weight (nli_confidence, which materials/claim_scores sums) is the stated confidence, but on a flagged passage at
// most the offline judge's confidence (0 without an offline verdict) until a person confirms it. The ticket is
// consumed and a (:Judgment) history record is written. The claim's stored sums move by exactly the old weight out
// and the new weight in (a claim without stored sums keeps none); a sum with no edge left is exactly zero.
// Params: $task_id, $judge, $judge_rank, $instructions_version,
//         $claims = [{claim_id, items: [{index, ticket_id, relation, label, confidence, rationale, judgment_id,
//                                        new_edge_id}]}]
UNWIND $claims AS grp
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim {id: grp.claim_id})
CALL apoc.lock.nodes([c])
CALL (c, grp) {
  UNWIND grp.items AS it
  OPTIONAL MATCH (t:JudgingTicket {id: it.ticket_id})
    WHERE t.task_id = $task_id AND t.claim_id = c.id
  OPTIONAL MATCH (f:Fragment {id: t.fragment_id})
  OPTIONAL MATCH (f)-[r:SUPPORTS|REFUTES|NEUTRAL]->(c)
  WITH c, it, t, f, r,
       CASE WHEN r IS NULL THEN null
            ELSE type(r) + '|' + coalesce(r.judge, '') + '|' + coalesce(toString(r.judged_at), '') END AS state
  WITH c, it, t, f, r,
       CASE
         WHEN t IS NULL OR f IS NULL THEN 'unknown'
         WHEN t.expires_at < datetime() THEN 'expired'
         WHEN coalesce(r.id, '') <> coalesce(t.edge_id, '') OR coalesce(state, '') <> coalesce(t.edge_state, '')
           THEN 'stale'
         WHEN coalesce(r.judge_rank, 0) > $judge_rank THEN 'outranked'
         ELSE 'ok'
       END AS status
  CALL (c, it, t, f, r, status) {
    WITH status WHERE status <> 'ok'
    RETURN null AS edge, null AS old_type, {} AS props
    UNION ALL
    WITH it, r, status WHERE status = 'ok' AND r IS NOT NULL AND type(r) = it.relation
    RETURN r AS edge, type(r) AS old_type, properties(r) AS props
    UNION ALL
    WITH c, it, f, r, status WHERE status = 'ok' AND r IS NOT NULL AND type(r) <> it.relation
    WITH c, it, f, r, type(r) AS old_type, properties(r) AS props
    CREATE (f)-[n:$(it.relation)]->(c)
    SET n = props
    DELETE r
    RETURN n AS edge, old_type, props
    UNION ALL
    WITH c, it, t, f, r, status WHERE status = 'ok' AND r IS NULL
    CREATE (f)-[n:$(it.relation) {id: it.new_edge_id, created_at: datetime(), edge_human_corrected: false,
                                  source_domain_category: t.category}]->(c)
    // a passage of a retracted paper (retractions/retract_edges): the new edge is retracted from the start
    FOREACH (_ IN CASE WHEN EXISTS { (f)-[:EXTRACTED_FROM]->(rp:Page) WHERE rp.retracted_at IS NOT NULL }
                  THEN [1] ELSE [] END | SET n.retracted = true, n.retracted_at = datetime())
    // a passage gone from every page of the claim's task that carried it (freshness/supersede_passages)
    FOREACH (_ IN CASE WHEN EXISTS { (f)-[x:EXTRACTED_FROM]->(:Page) WHERE x.superseded_at IS NOT NULL }
                       AND NOT EXISTS { (f)-[x:EXTRACTED_FROM]->(:Page)<-[:READ]-(:Task {id: c.task_id})
                                        WHERE x.superseded_at IS NULL }
                  THEN [1] ELSE [] END | SET n.superseded = true, n.superseded_at = datetime())
    RETURN n AS edge, null AS old_type, {} AS props
  }
  WITH c, it, t, f, status, edge, old_type, props,
       CASE WHEN old_type IS NULL THEN 0.0
            WHEN props.edge_human_corrected = true THEN 1.0
            ELSE coalesce(toFloat(props.nli_confidence), 0.0) END AS old_weight,
       CASE WHEN old_type IS NOT NULL AND coalesce(props.judge_rank, 0) = 0 THEN old_type
            ELSE props.offline_relation END AS offline_relation,
       CASE WHEN old_type IS NOT NULL AND coalesce(props.judge_rank, 0) = 0 THEN props.nli_confidence
            ELSE props.offline_confidence END AS offline_confidence
  WITH c, it, t, f, status, edge, old_type, props, old_weight, offline_relation, offline_confidence,
       CASE WHEN coalesce(t.flagged, false) AND it.confidence > coalesce(offline_confidence, 0.0)
            THEN coalesce(toFloat(offline_confidence), 0.0) ELSE toFloat(it.confidence) END AS weight
  FOREACH (_ IN CASE WHEN edge IS NULL THEN [] ELSE [1] END |
    SET edge.judge = $judge, edge.judge_rank = $judge_rank, edge.judged_at = datetime(),
        edge.instructions_version = $instructions_version, edge.nli_label = it.label, edge.nli_confidence = weight,
        edge.nli_confidence_raw = null, edge.nli_calibrator_version = null, edge.edge_human_corrected = false,
        edge.assistant_confidence = it.confidence, edge.judge_rationale = it.rationale,
        edge.judge_passage_flagged = coalesce(t.flagged, false),
        edge.offline_relation = offline_relation, edge.offline_confidence = offline_confidence
    CREATE (:Judgment {id: it.judgment_id, edge_id: edge.id, claim_id: c.id, fragment_id: f.id, task_id: $task_id,
                       judge: $judge, judge_rank: $judge_rank, relation: it.relation, confidence: it.confidence,
                       weight: weight, rationale: it.rationale, previous_relation: old_type,
                       previous_judge: props.judge, previous_confidence: props.nli_confidence,
                       passage_flagged: coalesce(t.flagged, false), ticket_id: t.id, at: datetime(),
                       instructions_version: $instructions_version})
    DELETE t)
  // a retracted edge keeps its verdict but moves no sum or count (old_rel / new_rel null)
  RETURN collect({index: it.index, status: status, edge_id: edge.id, relation: it.relation, old_type: old_type,
                  old_weight: old_weight, weight: weight,
                  old_rel: CASE WHEN (edge.retracted = true OR edge.superseded = true) THEN null ELSE old_type END,
                  new_rel: CASE WHEN (edge.retracted = true OR edge.superseded = true) THEN null ELSE it.relation END}) AS results
}
WITH c, results, [x IN results WHERE x.status = 'ok'] AS done
SET c.evidence_support_weight = c.evidence_support_weight
      - reduce(s = 0.0, e IN done | s + CASE e.old_rel WHEN 'SUPPORTS' THEN e.old_weight ELSE 0.0 END)
      + reduce(s = 0.0, e IN done | s + CASE e.new_rel WHEN 'SUPPORTS' THEN e.weight ELSE 0.0 END),
    c.evidence_refute_weight = c.evidence_refute_weight
      - reduce(s = 0.0, e IN done | s + CASE e.old_rel WHEN 'REFUTES' THEN e.old_weight ELSE 0.0 END)
      + reduce(s = 0.0, e IN done | s + CASE e.new_rel WHEN 'REFUTES' THEN e.weight ELSE 0.0 END),
    c.evidence_supports = c.evidence_supports - size([e IN done WHERE e.old_rel = 'SUPPORTS'])
      + size([e IN done WHERE e.new_rel = 'SUPPORTS']),
    c.evidence_refutes = c.evidence_refutes - size([e IN done WHERE e.old_rel = 'REFUTES'])
      + size([e IN done WHERE e.new_rel = 'REFUTES']),
    c.evidence_neutrals = c.evidence_neutrals - size([e IN done WHERE e.old_rel = 'NEUTRAL'])
      + size([e IN done WHERE e.new_rel = 'NEUTRAL'])
SET c.evidence_support_weight = CASE WHEN c.evidence_supports = 0 THEN 0.0 ELSE c.evidence_support_weight END,
    c.evidence_refute_weight = CASE WHEN c.evidence_refutes = 0 THEN 0.0 ELSE c.evidence_refute_weight END
RETURN c.id AS claim_id, results
