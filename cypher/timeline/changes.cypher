// mode: read
// What moved each claim of a task since a moment ($since, an ISO datetime): per claim its newest snapshot from
// before that moment (null: none; the claim is new or was never snapshotted) and the causes after it, each capped at
// $causes_per_claim, newest first:
// - added: stance edges created since (new evidence), with the first page the task read that carries the passage;
// - judged: (:Judgment) records since (a person's correction, an assistant's verdict: who, from what, to what);
// - retracted: pages the task read, carrying evidence of the claim, found retracted since;
// - page_changed: pages the task read that changed and were read again (freshness/supersede_passages), with the
//   claim's edges whose passage left the page since (edge_ids) and those whose passage came back (restored_edge_ids);
// - ruled: rule deployments since (runs of kind 'rule') at which the claim's scores stood differently (the claim's
//   snapshot of that run), with what was deployed (the run's cause_id, e.g. 'stance_llm v3: approve prp_...').
// Scores now come from materials/claim_scores (the one statement that computes confidence). Timestamps as strings.
// Params: $task_id, $since, $causes_per_claim
MATCH (t:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
WITH t, c, datetime($since) AS since
CALL (c, since) {
  OPTIONAL MATCH (c)-[:HAS_SNAPSHOT]->(s:ClaimSnapshot)
    WHERE s.at < since
  RETURN s AS before ORDER BY s.at DESC, s.seq DESC LIMIT 1
}
CALL (t, c, since) {
  OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
    WHERE r.created_at >= since
  WITH r, f ORDER BY r.created_at DESC, r.id
  WITH r, f LIMIT $causes_per_claim
  RETURN collect(CASE WHEN r IS NOT NULL THEN {
    at: toString(r.created_at), edge_id: r.id, relation: toLower(type(r)), judge: r.judge,
    weight: CASE WHEN (r.retracted = true OR r.superseded = true) THEN 0.0 WHEN r.edge_human_corrected = true THEN 1.0
                 ELSE toFloat(r.nli_confidence) END,
    fragment_id: f.id,
    page: head(COLLECT { MATCH (f)-[:EXTRACTED_FROM]->(p:Page)<-[:READ]-(t)
                         RETURN p {.id, .url, .title, .doi} ORDER BY p.crawled_at, p.id })} END) AS added
}
CALL (c, since) {
  OPTIONAL MATCH (j:Judgment {claim_id: c.id})
    WHERE j.at >= since
  WITH j ORDER BY j.at DESC, j.id
  WITH j LIMIT $causes_per_claim
  RETURN collect(CASE WHEN j IS NOT NULL THEN j {.*, at: toString(j.at)} END) AS judged
}
CALL (t, c, since) {
  OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment)-[:EXTRACTED_FROM]->(p:Page)<-[:READ]-(t)
    WHERE p.retracted_at >= since
  WITH p, collect(r.id) AS edge_ids ORDER BY p.retracted_at DESC, p.id
  WITH p, edge_ids LIMIT $causes_per_claim
  RETURN collect(CASE WHEN p IS NOT NULL THEN {
    at: toString(p.retracted_at), page: p {.id, .url, .title, .doi}, edge_ids: edge_ids,
    notice_doi: p.retraction_notice_doi, source: p.retraction_source} END) AS retracted
}
CALL (t, c, since) {
  OPTIONAL MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment)-[:EXTRACTED_FROM]->(p:Page)<-[:READ]-(t)
    WHERE p.changed_at IS NOT NULL
      AND ((r.superseded = true AND r.superseded_at >= since) OR (r.superseded IS NULL AND r.restored_at >= since))
  WITH p, collect(DISTINCT CASE WHEN r.superseded = true THEN r.id END) AS edge_ids,
       collect(DISTINCT CASE WHEN r.superseded IS NULL THEN r.id END) AS restored_edge_ids,
       max(coalesce(r.superseded_at, r.restored_at)) AS at
  WITH p, edge_ids, restored_edge_ids, at ORDER BY at DESC, p.id
  WITH p, edge_ids, restored_edge_ids, at LIMIT $causes_per_claim
  RETURN collect(CASE WHEN p IS NOT NULL THEN {
    at: toString(at), page: p {.id, .url, .title, .doi}, edge_ids: edge_ids,
    restored_edge_ids: restored_edge_ids} END) AS page_changed
}
CALL (c, since) {
  OPTIONAL MATCH (c)-[:HAS_SNAPSHOT]->(s:ClaimSnapshot {run_kind: 'rule'})
    WHERE s.at >= since
  WITH s ORDER BY s.at DESC, s.seq DESC
  WITH s LIMIT $causes_per_claim
  OPTIONAL MATCH (run:Run {id: s.run_id})
  RETURN collect(CASE WHEN s IS NOT NULL THEN {at: toString(s.at), run_id: s.run_id, rule: run.cause_id} END)
         AS ruled
}
RETURN c.id AS claim_id, c.text AS text, coalesce(c.created_at >= since, false) AS created_since,
       CASE WHEN before IS NULL THEN null ELSE before {.*, at: toString(before.at)} END AS before,
       added, judged, retracted, page_changed, ruled
ORDER BY c.created_at, c.id
