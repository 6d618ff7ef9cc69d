// mode: write
// Soft clean-up: the task's judging records: its (:Judgment) history and its open (:JudgingTicket)s.
// Params: $task_id
CALL () {
  MATCH (j:Judgment {task_id: $task_id})
  DELETE j
  RETURN count(*) AS judgments
}
CALL () {
  MATCH (t:JudgingTicket {task_id: $task_id})
  DELETE t
  RETURN count(*) AS tickets
}
RETURN judgments, tickets
