// mode: write
// transactions: auto
// Deletes every node and relationship. Only the test fixtures call this, behind the wipe guard.
// Params: $batch_size
MATCH (n)
CALL (n) {
  DETACH DELETE n
} IN TRANSACTIONS OF $batch_size ROWS
