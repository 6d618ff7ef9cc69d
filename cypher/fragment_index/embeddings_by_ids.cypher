// mode: read
// The stored embeddings of these fragments (those that exist and carry one).
// Params: $ids
UNWIND $ids AS id
MATCH (f:Fragment {id: id})
WHERE f.embedding IS NOT NULL
RETURN f.id AS id, f.embedding AS embedding
