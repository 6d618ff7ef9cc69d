// mode: write
// Claims are task-scoped: always new, labelled Claim and Task_<task_id>, hung under their Task. A claim extracted
// from fragments (by the LLM) is linked to them in the same write: (Claim)-[:EXTRACTED_FROM]->(Fragment); through
// (Fragment)-[:EXTRACTED_FROM]->(Page)-[:IN_DOMAIN]->(Domain) those are its source domains (decision record 0008).
// A claim a person wrote has no EXTRACTED_FROM. A new claim has no stance edge: its stored sums start at zero
// (every Lyra write of its stance edges keeps them; see materials/claim_scores).
// `linked` lets the caller check that every fragment was found.
// extraction_rules_version: the claim-extraction learned rule-set version an extracted claim was made under.
// Params: $task_id, $task_label (built from the validated id),
//         $rows = [{id, text, source_fragment_ids, extraction_rules_version}]
MATCH (t:Task {id: $task_id})
SET t.updated_at = datetime()
WITH t
UNWIND $rows AS row
CREATE (c:Claim {id: row.id, task_id: $task_id, text: row.text, claim_adoption_status: 'adopted',
                 created_at: datetime(), evidence_support_weight: 0.0, evidence_refute_weight: 0.0,
                 evidence_supports: 0, evidence_refutes: 0, evidence_neutrals: 0})
SET c:$($task_label), c.extraction_rules_version = row.extraction_rules_version
CREATE (t)-[:HAS_CLAIM]->(c)
WITH c, row
CALL (c, row) {
  UNWIND row.source_fragment_ids AS fid
  MATCH (f:Fragment {id: fid})
  CREATE (c)-[:EXTRACTED_FROM]->(f)
  RETURN count(f) AS linked
}
RETURN c.id AS id, linked
