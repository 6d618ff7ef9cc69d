// mode: write
// Hand the next sequence numbers to up to $limit new fragments (labelled Unsequenced when upsert_fragments created
// them) and remove the label. The counter node is locked first and held until commit, so numbers are handed out
// in commit order: whoever sees number n sees every fragment numbered below n too, which is what lets each
// process catch its FAISS index up from a watermark. The counter is read by the SET that writes it (read afresh
// under the lock, as in cypher/jobs/claim_next_job.cypher). A fragment two callers both numbered keeps the later
// number, which a reader of either finds again by id. Returns no row when nothing waited.
// Params: $limit
MERGE (s:Sequence {name: 'fragments'})
  ON CREATE SET s.value = 0, s.epoch = randomUUID()
WITH s
CALL apoc.lock.nodes([s])
MATCH (f:Unsequenced)
WITH s, f LIMIT $limit
WITH s, collect(f) AS fs
SET s.value = s.value + size(fs)
WITH s.value - size(fs) AS base, fs
UNWIND range(0, size(fs) - 1) AS i
WITH fs[i] AS f, base + i + 1 AS seq
SET f.seq = seq
REMOVE f:Unsequenced
RETURN count(f) AS sequenced, max(seq) AS top
