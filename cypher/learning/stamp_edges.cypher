// mode: write
// The judge and the learned rule-set version a stance verdict was made with, on the edges just written (only edges
// that carry none yet: an existing edge keeps what it was judged with). Params: $pairs = [{fragment_id, claim_id}],
// $judge_id, $rules_version
UNWIND $pairs AS pair
MATCH (:Fragment {id: pair.fragment_id})-[r:SUPPORTS|REFUTES|NEUTRAL]->(:Claim {id: pair.claim_id})
WHERE r.nli_judge_id IS NULL
SET r.nli_judge_id = $judge_id, r.nli_rules_version = $rules_version
RETURN count(r) AS stamped
