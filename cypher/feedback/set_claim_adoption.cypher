// mode: write
// claim_reject / claim_restore: the claim (of this task) changes its claim_adoption_status; it and its edges stay.
// Params: $task_id, $claim_id, $status ('adopted' | 'not_adopted'), $reason
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim {id: $claim_id})
WITH c, coalesce(c.claim_adoption_status, 'adopted') AS previous
SET c.claim_adoption_status = $status,
    c.claim_rejection_reason = CASE WHEN $status = 'not_adopted' THEN $reason ELSE null END,
    c.claim_rejected_at = CASE WHEN $status = 'not_adopted' THEN datetime() ELSE null END,
    c.claim_restored_at = CASE WHEN $status = 'adopted' AND previous = 'not_adopted' THEN datetime()
                               ELSE c.claim_restored_at END
RETURN c.id AS claim_id, previous, c.claim_adoption_status AS status, c.claim_rejection_reason AS reason,
       c.claim_rejected_at AS rejected_at
