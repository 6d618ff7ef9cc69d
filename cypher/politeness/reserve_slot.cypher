// mode: write
// The request rate of a domain, shared by every worker of every process: reserve the next free send time.
// next_at (epoch seconds) is the earliest time the next request may go out; the reservation reads the value it
// writes, so concurrent callers are serialised by the node's write lock and each gets its own slot, at least
// $interval seconds after the previous one. The caller sleeps until slot. Params: $domain, $now (epoch seconds,
// the caller's clock), $interval (seconds)
MERGE (r:DomainRate {domain: $domain})
  ON CREATE SET r.next_at = 0.0
SET r.next_at = CASE WHEN r.next_at > $now THEN r.next_at ELSE $now END + $interval
RETURN r.next_at - $interval AS slot
