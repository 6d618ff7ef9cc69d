// mode: write
// A retracted source's evidence stops counting (decision record 0015: a retraction withdraws a paper's
// findings in both directions, it does not show the opposite). Every stance edge from a fragment EXTRACTED_FROM a
// retracted page (retracted_at set) that the task read, to any claim, gets retracted: true and retracted_at; its
// weight and its count leave the claim's stored sums (see materials/claim_scores) in this statement, under a lock on
// the claim, exactly as if the edge were absent; a sum with no edge left is exactly zero; a claim without stored
// sums keeps none. Claims are locked in id order; each claim's edges are read again once it is locked, so an edge
// a concurrent writer retracted or re-typed meanwhile is counted once. Edges already retracted are left as they
// are: running this again changes nothing. Returns, per claim touched, the edges retracted now.
// Params: $task_id
MATCH (:Task {id: $task_id})-[:READ]->(p:Page)
WHERE p.retracted_at IS NOT NULL
MATCH (p)<-[:EXTRACTED_FROM]-(:Fragment)-[r:SUPPORTS|REFUTES|NEUTRAL]->(c:Claim)
WHERE coalesce(r.retracted, false) = false
WITH DISTINCT c
ORDER BY c.id
CALL (c) {
  CALL apoc.lock.nodes([c])
  MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
  WHERE coalesce(r.retracted, false) = false
    AND EXISTS { (f)-[:EXTRACTED_FROM]->(rp:Page) WHERE rp.retracted_at IS NOT NULL AND (:Task {id: $task_id})-[:READ]->(rp) }
  // a superseded edge (freshness/supersede_passages) is out of the sums already: flagged, not subtracted again
  WITH c, r, CASE WHEN r.superseded = true THEN null ELSE type(r) END AS rel,
       CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE coalesce(toFloat(r.nli_confidence), 0.0) END AS weight
  SET r.retracted = true, r.retracted_at = datetime()
  WITH c, collect({id: r.id, rel: rel, weight: weight}) AS gone
  SET c.evidence_support_weight = c.evidence_support_weight
        - reduce(s = 0.0, e IN gone | s + CASE e.rel WHEN 'SUPPORTS' THEN e.weight ELSE 0.0 END),
      c.evidence_refute_weight = c.evidence_refute_weight
        - reduce(s = 0.0, e IN gone | s + CASE e.rel WHEN 'REFUTES' THEN e.weight ELSE 0.0 END),
      c.evidence_supports = c.evidence_supports - size([e IN gone WHERE e.rel = 'SUPPORTS']),
      c.evidence_refutes = c.evidence_refutes - size([e IN gone WHERE e.rel = 'REFUTES']),
      c.evidence_neutrals = c.evidence_neutrals - size([e IN gone WHERE e.rel = 'NEUTRAL'])
  SET c.evidence_support_weight = CASE WHEN c.evidence_supports = 0 THEN 0.0 ELSE c.evidence_support_weight END,
      c.evidence_refute_weight = CASE WHEN c.evidence_refutes = 0 THEN 0.0 ELSE c.evidence_refute_weight END
  RETURN [e IN gone | e.id] AS edge_ids
}
RETURN c.id AS claim_id, c.task_id AS task_id, edge_ids
