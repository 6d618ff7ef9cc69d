// mode: read
// Reviews of stance verdicts made under rule-set versions that held the rule: kept (confirmations) and corrected.
// Params: $component, $rule_id
OPTIONAL MATCH (s:RuleSetVersion {component: $component})
WHERE $rule_id IN s.rule_ids
WITH collect(s.version) AS versions
OPTIONAL MATCH (r:FeedbackRecord {component: 'stance'})
WHERE r.rules_version IN versions AND r.kind IN ['confirmation', 'correction']
RETURN count(CASE WHEN r.kind = 'confirmation' THEN 1 END) AS kept,
       count(CASE WHEN r.kind = 'correction' THEN 1 END) AS corrected
