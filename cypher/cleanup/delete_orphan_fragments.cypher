// mode: write
// transactions: auto
// Hard clean-up: of the given fragments, those no stance edge uses any more (another task's edge keeps it).
// Params: $fragment_ids, $batch_size
UNWIND $fragment_ids AS fid
MATCH (f:Fragment {id: fid})
WHERE NOT EXISTS { (f)-[:SUPPORTS|REFUTES|NEUTRAL]->() }
CALL (f) {
  DETACH DELETE f
} IN TRANSACTIONS OF $batch_size ROWS
