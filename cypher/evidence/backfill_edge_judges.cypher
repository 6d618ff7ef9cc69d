// mode: write
// transactions: auto
// Graphs written before stance edges named their judge: each edge without judge_rank gets judge,
// judge_rank, judged_at and instructions_version once. A human-corrected edge is 'human:unknown' (rank 2, judged when
// it was corrected); any other is the offline judge's ('offline:' + the judge id learning/stamp_edges recorded, else
// 'offline:unknown'; rank 0; judged when it was created; its learned rule-set version as 'rules:<n>'). Runs with the
// schema, in batches; touches nothing when every edge has its judge. Params: none
MATCH ()-[r:SUPPORTS|REFUTES|NEUTRAL]->()
WHERE r.judge_rank IS NULL
CALL (r) {
  SET r.judge = CASE WHEN r.edge_human_corrected = true THEN 'human:unknown'
                     ELSE 'offline:' + coalesce(r.nli_judge_id, 'unknown') END,
      r.judge_rank = CASE WHEN r.edge_human_corrected = true THEN 2 ELSE 0 END,
      r.judged_at = coalesce(r.edge_corrected_at, r.created_at, datetime()),
      r.instructions_version = coalesce(r.instructions_version,
                                        CASE WHEN r.nli_rules_version IS NOT NULL
                                          THEN 'rules:' + toString(r.nli_rules_version) END)
} IN TRANSACTIONS OF 10000 ROWS
RETURN count(*) AS edges
