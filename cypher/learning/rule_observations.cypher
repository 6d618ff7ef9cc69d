// mode: read
// Reviews of outputs made under rule-set versions that held the rule: kept (confirmations) and corrected. The
// reviews are the feedback records of component $records ('stance' verdicts, 'claim_extraction' extracted claims).
// Params: $component, $rule_id, $records
OPTIONAL MATCH (s:RuleSetVersion {component: $component})
WHERE $rule_id IN s.rule_ids
WITH collect(s.version) AS versions
OPTIONAL MATCH (r:FeedbackRecord {component: $records})
WHERE r.rules_version IN versions AND r.kind IN ['confirmation', 'correction']
RETURN count(CASE WHEN r.kind = 'confirmation' THEN 1 END) AS kept,
       count(CASE WHEN r.kind = 'correction' THEN 1 END) AS corrected
