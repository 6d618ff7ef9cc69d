// mode: read
// Which of the given fragment / claim ids do not exist (checked before writing stance edges).
// Params: $fragment_ids, $claim_ids
CALL (){
  UNWIND $fragment_ids AS fid
  OPTIONAL MATCH (f:Fragment {id: fid})
  WITH fid WHERE f IS NULL
  RETURN collect(fid) AS missing_fragments
}
CALL (){
  UNWIND $claim_ids AS cid
  OPTIONAL MATCH (c:Claim {id: cid})
  WITH cid WHERE c IS NULL
  RETURN collect(cid) AS missing_claims
}
RETURN missing_fragments, missing_claims
