// mode: write
// The second half of a rate slot (after reserve_slot and the caller's sleep): the request may go out now only if
// the last request sent to the domain went out at least $interval seconds ago. The check-and-set reads the value
// it writes (last_sent), so it is made under the node's write lock: of two callers only one can set its $now.
// sent = false: wait until last_sent + $interval and ask again. This makes the spacing hold between the moments the
// requests really leave, even when a caller wakes up late from its sleep (a busy machine) and sends after its slot.
// Params: $domain, $now (epoch seconds, the caller's clock), $interval
MERGE (r:DomainRate {domain: $domain})
  ON CREATE SET r.next_at = 0.0
SET r.last_sent = CASE WHEN coalesce(r.last_sent, -1.0e12) + $interval <= $now THEN $now ELSE r.last_sent END
RETURN r.last_sent = $now AS sent, r.last_sent AS last_sent
