// mode: read
// The fragment of each stance edge (by edge id), for measuring where a ranking rule puts reviewed passages.
// Params: $edge_ids
UNWIND $edge_ids AS eid
MATCH (f:Fragment)-[r:SUPPORTS|REFUTES|NEUTRAL {id: eid}]->(:Claim)
RETURN eid AS edge_id, f.id AS fragment_id
