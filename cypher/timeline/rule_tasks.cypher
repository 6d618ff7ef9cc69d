// mode: read
// The tasks a learned-rule deployment of $component bears on, each of which gets a recorded 'rule' run
// (docs/concepts/living-evidence.md): for claim_extraction the tasks holding claims the LLM extracted; for every
// other component (the stance judges, the ranking, the citation rules, a calibrator) the tasks with stance evidence.
// Params: $component
MATCH (t:Task)
  WHERE CASE $component
          WHEN 'claim_extraction' THEN
            EXISTS { MATCH (t)-[:HAS_CLAIM]->(c:Claim) WHERE c.extraction_rules_version IS NOT NULL }
          ELSE EXISTS { MATCH (t)-[:HAS_CLAIM]->(:Claim)<-[:SUPPORTS|REFUTES|NEUTRAL]-(:Fragment) }
        END
RETURN t.id AS task_id
ORDER BY t.id
