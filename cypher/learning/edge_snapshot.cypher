// mode: read
// What a stance edge says before a reviewer acts on it: the texts, the verdict and the judge that made it.
// Params: $task_id, $edge_id
MATCH (f:Fragment)-[r:SUPPORTS|REFUTES|NEUTRAL {id: $edge_id}]->(c:Claim)<-[:HAS_CLAIM]-(:Task {id: $task_id})
OPTIONAL MATCH (f)-[:EXTRACTED_FROM]->(p:Page)
RETURN r.id AS edge_id, c.id AS claim_id, c.text AS hypothesis, f.text AS premise,
       coalesce(r.nli_label, toLower(type(r))) AS predicted_label,
       coalesce(r.nli_confidence_raw, r.nli_confidence) AS predicted_confidence,
       r.edge_previous_relation IS NOT NULL AS human_label,
       r.nli_judge_id AS judge_id, r.nli_rules_version AS rules_version, p.domain AS domain
LIMIT 1
