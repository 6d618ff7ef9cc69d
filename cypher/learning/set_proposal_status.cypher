// mode: write
// A pending proposal is decided (approved with the rule it became, or rejected). Params: $id, $status, $rule_id
MATCH (p:Proposal {id: $id, status: 'pending'})
SET p.status = $status, p.rule_id = $rule_id, p.decided_at = datetime()
RETURN p.id AS id
