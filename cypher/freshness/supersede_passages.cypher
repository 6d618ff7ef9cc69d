// mode: write
// A page read again (docs/concepts/living-evidence.md, decision record 0016): its passages no longer in the new
// version ($gone_ids: fragment ids) get superseded_at on their EXTRACTED_FROM link to the page, those in it again
// ($back_ids) lose it. Then every stance edge from those fragments, to a claim of a task that read the page, is brought to what
// it should be: superseded when every page of the claim's task carrying the fragment superseded it (a passage still
// on another page the task read keeps counting), counting otherwise. An edge that starts to be superseded gets
// superseded: true and superseded_at, one that counts again loses superseded and gets restored_at; in the same
// statement, under a lock on the claim, its weight and count leave (or re-enter) the claim's stored sums exactly
// like retractions/retract_edges; a retracted edge (already out of the sums) only has its flag changed. A sum with
// no edge left is exactly zero; a claim without stored sums keeps none. Claims are locked in id order and their
// edges read again once locked. Running it again changes nothing. Returns, per claim touched, the edges that
// stopped counting and those that count again. The page gets changed_at. Params: $page_id, $gone_ids, $back_ids
MATCH (p:Page {id: $page_id})<-[e:EXTRACTED_FROM]-(f:Fragment)
WHERE f.id IN $gone_ids OR f.id IN $back_ids
FOREACH (_ IN CASE WHEN f.id IN $gone_ids AND e.superseded_at IS NULL THEN [1] ELSE [] END |
  SET e.superseded_at = datetime())
FOREACH (_ IN CASE WHEN f.id IN $back_ids AND NOT f.id IN $gone_ids THEN [1] ELSE [] END | REMOVE e.superseded_at)
// the page changed, whatever read it (a refresh's re-check sets this too): get_changes and the timeline name it
SET p.changed_at = datetime()
WITH DISTINCT p, f
MATCH (f)-[:SUPPORTS|REFUTES|NEUTRAL]->(c:Claim)
WHERE (:Task {id: c.task_id})-[:READ]->(p)
WITH DISTINCT c
ORDER BY c.id
CALL (c) {
  CALL apoc.lock.nodes([c])
  MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)-[:EXTRACTED_FROM]->(:Page {id: $page_id})
  WITH c, r, f,
       EXISTS { (f)-[x:EXTRACTED_FROM]->(:Page)<-[:READ]-(:Task {id: c.task_id}) WHERE x.superseded_at IS NULL }
         AS present
  WITH c, r, present, coalesce(r.superseded, false) AS was
  WHERE was = present  // a state to change: superseded while present, or counting while gone from every page
  WITH c, r, present, type(r) AS rel, coalesce(r.retracted, false) AS retracted,
       CASE WHEN r.edge_human_corrected = true THEN 1.0 ELSE coalesce(toFloat(r.nli_confidence), 0.0) END AS weight
  FOREACH (_ IN CASE WHEN present THEN [1] ELSE [] END | REMOVE r.superseded SET r.restored_at = datetime())
  FOREACH (_ IN CASE WHEN present THEN [] ELSE [1] END | SET r.superseded = true, r.superseded_at = datetime())
  // +1 an edge that counts again, -1 one that stops; 0 a retracted edge (out of the sums either way)
  WITH c, r.id AS edge_id, present, rel, CASE WHEN retracted THEN 0 WHEN present THEN 1 ELSE -1 END AS sign,
       weight
  WITH c, collect({id: edge_id, present: present, rel: rel, sign: sign, weight: weight}) AS moved
  SET c.evidence_support_weight = c.evidence_support_weight
        + reduce(s = 0.0, e IN moved | s + CASE e.rel WHEN 'SUPPORTS' THEN e.sign * e.weight ELSE 0.0 END),
      c.evidence_refute_weight = c.evidence_refute_weight
        + reduce(s = 0.0, e IN moved | s + CASE e.rel WHEN 'REFUTES' THEN e.sign * e.weight ELSE 0.0 END),
      c.evidence_supports = c.evidence_supports + reduce(s = 0, e IN moved | s + CASE e.rel WHEN 'SUPPORTS' THEN e.sign ELSE 0 END),
      c.evidence_refutes = c.evidence_refutes + reduce(s = 0, e IN moved | s + CASE e.rel WHEN 'REFUTES' THEN e.sign ELSE 0 END),
      c.evidence_neutrals = c.evidence_neutrals + reduce(s = 0, e IN moved | s + CASE e.rel WHEN 'NEUTRAL' THEN e.sign ELSE 0 END)
  SET c.evidence_support_weight = CASE WHEN c.evidence_supports = 0 THEN 0.0 ELSE c.evidence_support_weight END,
      c.evidence_refute_weight = CASE WHEN c.evidence_refutes = 0 THEN 0.0 ELSE c.evidence_refute_weight END
  RETURN [e IN moved WHERE NOT e.present | e.id] AS superseded, [e IN moved WHERE e.present | e.id] AS restored
}
RETURN c.id AS claim_id, c.task_id AS task_id, superseded, restored
