// mode: write
// The push door (judge_with_assistant) gives back the tickets of the pairs it wrote nothing for (the client declined,
// timed out or answered outside the labels, the passage was flagged, the budget was spent): those pairs are offered
// again at once, to the pull door or a later call, instead of waiting for the tickets to expire. Only the task's own
// tickets. Params: $task_id, $ids
MATCH (t:JudgingTicket {task_id: $task_id})
WHERE t.id IN $ids
DELETE t
RETURN count(*) AS released
