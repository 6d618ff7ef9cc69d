// mode: write
// The leases coverage/lease_pairs gave this holder, released once their batch is judged and written.
// Params: $keys, $holder
UNWIND $keys AS key
MATCH (l:PairLease {key: key})
WHERE l.holder = $holder
DELETE l
RETURN count(*) AS released
