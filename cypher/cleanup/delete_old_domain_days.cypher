// mode: write
// transactions: auto
// Garbage collection, step 7: the per-domain daily page counts of days before $before (an ISO date, UTC): only the
// current day's count limits fetching, so older ones are history nobody reads.
// Params: $before, $batch_size
MATCH (d:DomainDay)
WHERE d.day < $before
CALL (d) {
  DELETE d
} IN TRANSACTIONS OF $batch_size ROWS
RETURN count(*) AS domain_days
