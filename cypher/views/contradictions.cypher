// mode: read
// Contradictions: claims with both SUPPORTS and REFUTES evidence, with the domain categories of both sides.
// Params: $task_id
MATCH (:Task {id: $task_id})-[:HAS_CLAIM]->(c:Claim)
MATCH (c)<-[s:SUPPORTS]-(sf:Fragment)
MATCH (c)<-[r:REFUTES]-(rf:Fragment)
WITH c, collect(DISTINCT {fragment_id: sf.id, edge_id: s.id, domain_category: s.source_domain_category,
                          nli_confidence: s.nli_confidence}) AS supporting,
        collect(DISTINCT {fragment_id: rf.id, edge_id: r.id, domain_category: r.source_domain_category,
                          nli_confidence: r.nli_confidence}) AS refuting
RETURN c.id AS claim_id, c.text AS claim, supporting, refuting,
       [x IN supporting | x.domain_category] AS supporting_categories,
       [x IN refuting | x.domain_category] AS refuting_categories
ORDER BY size(supporting) + size(refuting) DESC
