// mode: write
// transactions: auto
// Hard clean-up: of the given fragments, those no stance edge uses any more (another task's edge keeps it) and no
// claim was extracted from (another task's claim keeps its provenance, which its domains' rejection rates read) and
// on no page another task READ (that task may judge it against a claim it adds later).
// A fragment with a stance edge is never removed here, so no claim's stored sums change.
// Params: $fragment_ids, $batch_size
UNWIND $fragment_ids AS fid
MATCH (f:Fragment {id: fid})
WHERE NOT EXISTS { (f)-[:SUPPORTS|REFUTES|NEUTRAL]->() } AND NOT EXISTS { (f)<-[:EXTRACTED_FROM]-(:Claim) }
  AND NOT EXISTS { (f)-[:EXTRACTED_FROM]->(:Page)<-[:READ]-(:Task) }
CALL (f) {
  DETACH DELETE f
} IN TRANSACTIONS OF $batch_size ROWS
