// mode: read
// Where the graph's fragment sequence stands, for a process's FAISS index to decide whether to catch up: the last
// sequence number handed out (top, 0 before the first), the counter's epoch (a new one when the database was
// emptied or replaced) and how many new fragments still wait for their number. Constant-time reads (the label
// count store and a unique-index lookup).
MATCH (f:Unsequenced)
WITH count(f) AS pending
OPTIONAL MATCH (s:Sequence {name: 'fragments'})
RETURN coalesce(s.value, 0) AS top, s.epoch AS epoch, pending
