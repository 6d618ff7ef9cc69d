// mode: write
// transactions: auto
// Hard clean-up: of the given fragments, those no stance edge uses any more (another task's edge keeps it) and no
// claim was extracted from (another task's claim keeps its provenance, which its domains' rejection rates read).
// A fragment with a stance edge is never removed here, so no claim's stored sums change.
// Params: $fragment_ids, $batch_size
UNWIND $fragment_ids AS fid
MATCH (f:Fragment {id: fid})
WHERE NOT EXISTS { (f)-[:SUPPORTS|REFUTES|NEUTRAL]->() } AND NOT EXISTS { (f)<-[:EXTRACTED_FROM]-(:Claim) }
CALL (f) {
  DETACH DELETE f
} IN TRANSACTIONS OF $batch_size ROWS
