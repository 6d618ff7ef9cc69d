// mode: write
// Several workers may rank the same task at once (its jobs run in parallel): before judging a batch, a worker takes a
// short lease on each of its (fragment, claim) pairs, so no pair is judged twice at the same time. A pair is leased
// by this holder when it has no stance edge yet (another worker may have written it since the plan was made) and it
// had no lease, its lease had expired (a worker that died), or the holder already held it. The key's uniqueness
// constraint serialises two MERGEs of one key. Returns the keys this holder now holds; the worker releases them
// (coverage/release_pairs) once the batch's edges are written.
// Params: $task_id, $pairs = [{key: "<fragment id>|<claim id>", fragment_id, claim_id}], $holder, $seconds
UNWIND $pairs AS pair
WITH pair
WHERE NOT EXISTS {
  MATCH (:Fragment {id: pair.fragment_id})-[:SUPPORTS|REFUTES|NEUTRAL]->(:Claim {id: pair.claim_id})
}
MERGE (l:PairLease {key: pair.key})
  ON CREATE SET l.holder = $holder, l.task_id = $task_id, l.until = datetime() + duration({seconds: $seconds})
WITH l, pair
WHERE l.holder = $holder OR l.until < datetime()
SET l.holder = $holder, l.task_id = $task_id, l.until = datetime() + duration({seconds: $seconds})
RETURN pair.key AS key
