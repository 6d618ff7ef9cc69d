// mode: read
// A component's rule set: the latest version when $version is null, otherwise that version. Params: $component,
// $version
MATCH (s:RuleSetVersion {component: $component})
WHERE $version IS NULL OR s.version = $version
RETURN s {.*, created_at: toString(s.created_at)} AS rule_set
ORDER BY s.version DESC
LIMIT 1
