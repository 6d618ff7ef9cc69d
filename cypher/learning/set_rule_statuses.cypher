// mode: write
// After a new rule-set version: the component's rules in it are active, the others retired (with who, why and the
// cause of the change). Params: $component, $active_ids, $reason, $reviewer_id, $cause
MATCH (r:LearnedRule {component: $component})
WITH r, r.id IN $active_ids AS active
WHERE (active AND r.status <> 'active') OR (NOT active AND r.status = 'active')
SET r.status = CASE WHEN active THEN 'active' ELSE 'retired' END,
    r.status_changed_at = datetime(), r.status_reason = $reason, r.status_changed_by = $reviewer_id,
    r.status_cause = $cause
RETURN count(r) AS changed
