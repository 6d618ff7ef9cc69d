// mode: write
// One stance edge per (fragment, claim): rows grouped by claim; each claim is locked once and its existing stance
// edges read once, so concurrent writers cannot both create an edge for the same pair and a pair that already has
// an edge (of any of the three types) is left unchanged. The claim's stored sums (evidence_support_weight,
// evidence_refute_weight, evidence_supports, evidence_refutes, evidence_neutrals; see materials/claim_scores) grow
// by the edges created, in the same statement and under the same lock; a claim without them keeps none (null + x is
// null) and is aggregated on read. Returns the ids of the edges created; the caller reads the existing ones with
// evidence/stance_edges_for_pairs.
// nli_confidence_raw / nli_calibrator_version are set only when a calibrator mapped the judge's confidence.
// Params: $claims = [{claim_id, edges: [{id, fragment_id, relation, nli_label, nli_confidence, nli_confidence_raw,
//                                        nli_calibrator_version, source_domain_category, target_domain_category,
//                                        cause_id, nli_evidence_sentence, judge, instructions_version}]}]
// nli_evidence_sentence: the premise sentence the judge found decisive (null when the judge does not read sentences).
// judge / judge_rank / judged_at / instructions_version: these edges are the offline judge's (rank 0);
// judge null is 'offline:import'.
// A passage of a retracted paper (a page with retracted_at, see retractions/retract_edges) gets a retracted edge:
// stored, shown, but left out of the claim's sums and counts; so does a passage superseded on every page of the
// claim's task that carried it (freshness/supersede_passages, decision record 0016). Higher judges replace them through judging/submit_judgments and
// feedback/correct_edge, never through this statement.
UNWIND $claims AS grp
MATCH (c:Claim {id: grp.claim_id})
CALL apoc.lock.nodes([c])
WITH c, grp, COLLECT { MATCH (c)<-[:SUPPORTS|REFUTES|NEUTRAL]-(known:Fragment) RETURN known.id } AS known
CALL (c, grp, known) {
  UNWIND grp.edges AS row
  WITH row
    WHERE NOT row.fragment_id IN known
  MATCH (f:Fragment {id: row.fragment_id})
  WITH row, f, EXISTS { (f)-[:EXTRACTED_FROM]->(rp:Page) WHERE rp.retracted_at IS NOT NULL } AS retracted,
       // gone from every page of the claim's task that carried it (freshness/supersede_passages)
       EXISTS { (f)-[x:EXTRACTED_FROM]->(:Page) WHERE x.superseded_at IS NOT NULL }
         AND NOT EXISTS { (f)-[x:EXTRACTED_FROM]->(:Page)<-[:READ]-(:Task {id: c.task_id})
                          WHERE x.superseded_at IS NULL } AS superseded
  CREATE (f)-[r:$(row.relation) {id: row.id, nli_label: row.nli_label, nli_confidence: row.nli_confidence,
                                  edge_human_corrected: false, created_at: datetime(),
                                  judge: coalesce(row.judge, 'offline:import'), judge_rank: 0, judged_at: datetime()}]->(c)
  SET r.nli_confidence_raw = row.nli_confidence_raw, r.nli_calibrator_version = row.nli_calibrator_version,
      r.source_domain_category = row.source_domain_category, r.target_domain_category = row.target_domain_category,
      r.cause_id = row.cause_id, r.nli_evidence_sentence = row.nli_evidence_sentence,
      r.instructions_version = row.instructions_version
  FOREACH (_ IN CASE WHEN retracted THEN [1] ELSE [] END | SET r.retracted = true, r.retracted_at = datetime())
  FOREACH (_ IN CASE WHEN superseded THEN [1] ELSE [] END | SET r.superseded = true, r.superseded_at = datetime())
  // a retracted or superseded edge is stored but counts for nothing (relation null in the sums)
  RETURN collect({id: row.id, relation: CASE WHEN retracted OR superseded THEN null ELSE row.relation END,
                  weight: coalesce(toFloat(row.nli_confidence), 0.0)}) AS created
}
SET c.evidence_support_weight = c.evidence_support_weight
      + reduce(s = 0.0, e IN created | s + CASE e.relation WHEN 'SUPPORTS' THEN e.weight ELSE 0.0 END),
    c.evidence_refute_weight = c.evidence_refute_weight
      + reduce(s = 0.0, e IN created | s + CASE e.relation WHEN 'REFUTES' THEN e.weight ELSE 0.0 END),
    c.evidence_supports = c.evidence_supports + size([e IN created WHERE e.relation = 'SUPPORTS']),
    c.evidence_refutes = c.evidence_refutes + size([e IN created WHERE e.relation = 'REFUTES']),
    c.evidence_neutrals = c.evidence_neutrals + size([e IN created WHERE e.relation = 'NEUTRAL'])
WITH created
UNWIND created AS e
RETURN e.id AS id
