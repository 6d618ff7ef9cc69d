// mode: read
// A task's judging state for the pull door's limits: its unexpired tickets, and the assistant judgments written in
// the last $seconds (the per-task rate limit). Params: $task_id, $seconds
RETURN COUNT { MATCH (t:JudgingTicket {task_id: $task_id}) WHERE t.expires_at > datetime() } AS open_tickets,
       COUNT { MATCH (j:Judgment {task_id: $task_id})
               WHERE j.judge_rank = 1 AND j.at > datetime() - duration({seconds: $seconds}) } AS recent
