// mode: read
// The tickets submit_judgments was given, as they are now (a missing one is not returned). Params: $ids
UNWIND $ids AS tid
MATCH (t:JudgingTicket {id: tid})
RETURN t.id AS id, t.task_id AS task_id, t.claim_id AS claim_id, t.fragment_id AS fragment_id, t.edge_id AS edge_id,
       t.expires_at < datetime() AS expired
