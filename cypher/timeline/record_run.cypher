// mode: write
// One run of a task (an ingest or research job, a refresh, a feedback action, a judgment batch, a rule deployment,
// a retraction check) and, for each claim whose scores moved since its newest snapshot (or that has none), a new
// (:ClaimSnapshot) of where it stands now: alpha, beta, confidence, uncertainty, controversy and the evidence
// counts. (Task)-[:HAD_RUN]->(Run); (Claim)-[:HAS_SNAPSHOT]->(ClaimSnapshot). Retention: a claim keeps its first
// snapshot and its newest $keep_snapshots - 1; a task keeps its newest $keep_runs runs. Both are removed by the
// task's clean-up (cleanup/delete_task_timeline). Returns the run's id and how many claims moved.
// Each run takes the task's next sequence number (r.seq, from t.run_seq): the SET takes the task's write lock before
// reading the counter, so two runs of a task never share a number and a run numbered n+1 commits after run n. A
// reader that sees run n+1 has seen run n: the MCP changes watcher (timeline/runs_after) keeps its high-water mark
// in these numbers (docs/concepts/living-evidence.md).
// Params: $run = {id, task_id, kind, cause_id, started_at}, $claims = [{claim_id, alpha, beta, confidence,
//         uncertainty, controversy, supports, refutes, neutrals}], $keep_snapshots, $keep_runs
MATCH (t:Task {id: $run.task_id})
SET t.run_seq = coalesce(t.run_seq, 0) + 1
CREATE (r:Run {id: $run.id, task_id: $run.task_id, kind: $run.kind, cause_id: $run.cause_id, seq: t.run_seq,
               started_at: datetime($run.started_at), finished_at: datetime()})
CREATE (t)-[:HAD_RUN]->(r)
WITH t, r
CALL (t, r) {
  UNWIND $claims AS row
  MATCH (t)-[:HAS_CLAIM]->(c:Claim {id: row.claim_id})
  CALL (c) {
    OPTIONAL MATCH (c)-[:HAS_SNAPSHOT]->(s:ClaimSnapshot)
    RETURN s AS last ORDER BY s.at DESC, s.seq DESC LIMIT 1
  }
  WITH c, row, r, last
    WHERE last IS NULL OR abs(last.alpha - row.alpha) > 1e-9 OR abs(last.beta - row.beta) > 1e-9
       OR last.supports <> row.supports OR last.refutes <> row.refutes OR last.neutrals <> row.neutrals
  CREATE (c)-[:HAS_SNAPSHOT]->(:ClaimSnapshot {
    task_id: r.task_id, claim_id: c.id, run_id: r.id, run_kind: r.kind, at: r.finished_at,
    seq: coalesce(last.seq, 0) + 1, alpha: row.alpha, beta: row.beta, confidence: row.confidence,
    uncertainty: row.uncertainty, controversy: row.controversy, supports: row.supports, refutes: row.refutes,
    neutrals: row.neutrals})
  WITH c
  CALL (c) {
    MATCH (c)-[:HAS_SNAPSHOT]->(s:ClaimSnapshot)
    WITH s ORDER BY s.seq
    WITH collect(s) AS snaps
    WITH snaps, size(snaps) - $keep_snapshots + 1 AS cut
    UNWIND snaps[1..CASE WHEN cut > 1 THEN cut ELSE 1 END] AS old
    DETACH DELETE old
  }
  RETURN count(c) AS moved
}
SET r.claims_moved = moved
WITH t, r, moved
CALL (t) {
  MATCH (t)-[:HAD_RUN]->(old:Run)
  WITH old ORDER BY old.finished_at DESC, old.id DESC
  SKIP $keep_runs
  DETACH DELETE old
}
RETURN r.id AS run_id, moved
