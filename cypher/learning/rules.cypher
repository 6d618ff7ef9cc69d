// mode: read
// Learned rules, optionally of one component, oldest first. Params: $component
MATCH (r:LearnedRule)
WHERE $component IS NULL OR r.component = $component
RETURN r {.*, activated_at: toString(r.activated_at)} AS rule
ORDER BY r.activated_at, r.id
