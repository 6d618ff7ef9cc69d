// mode: write
// next_judgments: the task's expired tickets are removed, then one (:JudgingTicket) per item is written,
// naming the task, claim, fragment and the pair's edge as it is now (edge_id and edge_state: relation, judge and
// judged_at; both null for a pair without an edge), whether the passage was flagged, and when it expires.
// submit_judgments refuses a ticket whose pair changed since (stale). Items whose claim is not the task's are
// skipped. Returns the tickets written. Params: $task_id, $seconds, $rows = [{id, claim_id, fragment_id, flagged,
// policy, category}]
MATCH (task:Task {id: $task_id})
CALL (task) {
  MATCH (old:JudgingTicket {task_id: $task_id})
  WHERE old.expires_at < datetime()
  DELETE old
  RETURN count(*) AS expired
}
UNWIND $rows AS tk
MATCH (task)-[:HAS_CLAIM]->(c:Claim {id: tk.claim_id})
MATCH (f:Fragment {id: tk.fragment_id})
OPTIONAL MATCH (f)-[r:SUPPORTS|REFUTES|NEUTRAL]->(c)
CREATE (t:JudgingTicket {id: tk.id, task_id: $task_id, claim_id: c.id, fragment_id: f.id, edge_id: r.id,
                         edge_state: CASE WHEN r IS NULL THEN null
                                          ELSE type(r) + '|' + coalesce(r.judge, '') + '|'
                                               + coalesce(toString(r.judged_at), '') END,
                         flagged: tk.flagged, policy: tk.policy, category: tk.category, issued_at: datetime(),
                         expires_at: datetime() + duration({seconds: $seconds})})
RETURN t.id AS id, toString(t.expires_at) AS expires_at, r.id AS edge_id
