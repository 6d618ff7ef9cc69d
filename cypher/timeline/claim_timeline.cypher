// mode: read
// A claim's timeline, the audit log of what happened to it, newest first: its snapshots (where it stood after each
// run that moved it), its stance edges as they were added, the judgments that changed them (a person, an assistant)
// and the retractions of pages the task read that carry its evidence, and its passages that left a changed page
// (passage_superseded: the edge stopped counting) or came back to it (passage_restored; only the latest of each). In Neo4j Browser, the same for one claim:
//   MATCH (c:Claim {id: $claim_id})-[:HAS_SNAPSHOT]->(s) RETURN s ORDER BY s.at DESC
// Params: $task_id, $claim_ids, $limit
// One row per claim of $claim_ids that is the task's (none for another): the claim's id and text, its events (at most
// $limit) and how many it has.
UNWIND $claim_ids AS claim_id
MATCH (t:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim {id: claim_id})
WITH t, c, COLLECT {
  CALL (t, c) {
  MATCH (c)-[:HAS_SNAPSHOT]->(s:ClaimSnapshot)
  RETURN s.at AS at, 'snapshot' AS kind, s {.run_id, .run_kind, .confidence, .uncertainty, .controversy, .alpha,
                                          .beta, .supports, .refutes, .neutrals} AS detail
  UNION ALL
  MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
  RETURN r.created_at AS at, 'edge_added' AS kind,
         {edge_id: r.id, relation: toLower(type(r)), judge: r.judge, fragment_id: f.id,
          weight: CASE WHEN (r.retracted = true OR r.superseded = true) THEN 0.0 WHEN r.edge_human_corrected = true THEN 1.0
                       ELSE toFloat(r.nli_confidence) END} AS detail
  UNION ALL
  MATCH (j:Judgment {claim_id: c.id})
  RETURN j.at AS at, 'judgment' AS kind, j {.*, at: null} AS detail
  UNION ALL
  MATCH (c)<-[:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment)-[:EXTRACTED_FROM]->(p:Page)<-[:READ]-(t)
    WHERE p.retracted_at IS NOT NULL
  WITH DISTINCT p
  RETURN p.retracted_at AS at, 'retraction' AS kind,
         {page_id: p.id, url: p.url, doi: p.doi, notice_doi: p.retraction_notice_doi,
          source: p.retraction_source} AS detail
  UNION ALL
  MATCH (c)<-[r:SUPPORTS|REFUTES|NEUTRAL]-(f:Fragment)
    WHERE r.superseded_at IS NOT NULL OR r.restored_at IS NOT NULL
  UNWIND [x IN [['passage_superseded', r.superseded_at], ['passage_restored', r.restored_at]] WHERE x[1] IS NOT NULL]
    AS change
  RETURN change[1] AS at, change[0] AS kind,
         {edge_id: r.id, relation: toLower(type(r)), fragment_id: f.id,
          page: head(COLLECT { MATCH (f)-[:EXTRACTED_FROM]->(p:Page)<-[:READ]-(t) WHERE p.changed_at IS NOT NULL
                               RETURN p.url ORDER BY p.changed_at DESC, p.id })} AS detail
  }
  WITH at, kind, detail ORDER BY at DESC
  RETURN {at: toString(at), kind: kind, detail: detail}
} AS events
RETURN c.id AS claim_id, c.text AS text, events[..$limit] AS events, size(events) AS total
